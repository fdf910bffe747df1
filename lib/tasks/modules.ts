/**
 * What a tasks bundle's own code uses (`taskworker/runtime`): evaluating the user's modules and
 * reading their definitions. Kept apart from the registry's checks (lib/tasks/bundle.ts), which
 * only the dispatcher thread runs, so every pool thread loads no more than this.
 */
import { isAbsolute, relative } from 'node:path';
import { describe, ModuleLoadError } from '../errors';
import { type TaskDefinition, toDefinition } from './task';

/** One module of the tasks directory as the generated bundle entry lists it. */
export interface TaskModuleEntry {
  readonly file: string;
  readonly module: { readonly default?: unknown };
}

/** Reads each module's default export as a task definition; the error names the file. */
export function definitionsFromModules(modules: readonly TaskModuleEntry[]): TaskDefinition[] {
  return modules.map((entry) => {
    const exported = entry.module.default;
    return toDefinition(exported, entry.file);
  });
}

/**
 * Evaluates one module of the user's project inside a bundle (the generated entry calls this for
 * the config and each task module). A module that throws while loading is named by its path in
 * the project, with the first line of its stack (source-mapped where source maps are on).
 */
export function loadModule(entry: { readonly file: string; readonly load: () => unknown }, what: string): { readonly default?: unknown } {
  try {
    return entry.load() as { readonly default?: unknown };
  } catch (error) {
    throw new ModuleLoadError(entry.file, `${what} ${entry.file} threw while loading: ${describe(error)}${where(error)}`, {
      cause: error,
    });
  }
}

/** ` (file:line:column)` of an error's first stack frame, relative to the working directory; empty when unknown. */
function where(error: unknown): string {
  const frame = error instanceof Error ? error.stack?.split('\n').find((line) => /^\s+at /.test(line)) : undefined;
  const location = frame ? /\(?((?:[A-Za-z]:)?[^():]+:\d+:\d+)\)?\s*$/.exec(frame)?.[1] : undefined;
  return location ? ` (${isAbsolute(location) ? relative(process.cwd(), location) : location})` : '';
}

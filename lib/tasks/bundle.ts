import { isAbsolute, relative } from 'node:path';
import { resolveConfig, type TaskworkerConfig } from '../config';
import { BundleError, describe, ModuleLoadError } from '../errors';
import { createRegistry } from './registry';
import { type TaskDefinition, type TaskRegistry, toDefinition } from './task';

/** One module of the tasks directory as the generated bundle entry lists it. */
export interface TaskModuleEntry {
  readonly file: string;
  readonly module: { readonly default?: unknown };
}

/** The shape of a tasks bundle (`tasks.cjs`): the app config and every task module, plus the worker runtime. */
export interface TaskBundleExports {
  readonly config: unknown;
  readonly taskModules: readonly TaskModuleEntry[];
}

/** A loaded, validated tasks bundle. */
export interface TaskBundle {
  readonly path: string;
  readonly config: TaskworkerConfig;
  readonly tasks: readonly TaskDefinition[];
  readonly registry: TaskRegistry;
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

/**
 * Loads a built tasks bundle on the dispatcher thread: validates its config and task
 * definitions against each other. Task bodies never run on this thread.
 */
export function loadTaskBundle(path: string): TaskBundle {
  let exports: Partial<TaskBundleExports>;
  try {
    exports = require(path) as Partial<TaskBundleExports>;
  } catch (error) {
    // Thrown by the bundle's own copy of the library: the same class by its literal name.
    if (error instanceof Error && error.name === 'ModuleLoadError') {
      throw new ModuleLoadError((error as ModuleLoadError).file, error.message, { cause: error });
    }
    throw new BundleError(`Cannot load tasks bundle ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (!Array.isArray(exports.taskModules)) throw new BundleError(`${path} is not a taskworker tasks bundle (no taskModules export)`);
  const config = resolveConfig(exports.config);
  const tasks = definitionsFromModules(exports.taskModules);
  return { path, config, tasks, registry: createRegistry(tasks, config) };
}

import { resolveConfig, type TaskworkerConfig } from './config';
import { BundleError } from './errors';
import { createRegistry, type TaskDefinition, type TaskRegistry, toDefinition } from './task';

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
 * Loads a built tasks bundle on the dispatcher thread: validates its config and task
 * definitions against each other. Task bodies never run on this thread.
 */
export function loadTaskBundle(path: string): TaskBundle {
  let exports: Partial<TaskBundleExports>;
  try {
    exports = require(path) as Partial<TaskBundleExports>;
  } catch (error) {
    throw new BundleError(`Cannot load tasks bundle ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (!Array.isArray(exports.taskModules)) throw new BundleError(`${path} is not a taskworker tasks bundle (no taskModules export)`);
  const config = resolveConfig(exports.config);
  const tasks = definitionsFromModules(exports.taskModules);
  return { path, config, tasks, registry: createRegistry(tasks, config) };
}

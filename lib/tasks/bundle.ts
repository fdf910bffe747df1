import { resolveConfig, type TaskworkerConfig } from '../config/app-config';
import { BundleError, ModuleLoadError } from '../errors';
import { definitionsFromModules, type TaskModuleEntry } from './modules';
import { createRegistry } from './registry';
import type { TaskDefinition, TaskRegistry } from './task';

export { definitionsFromModules, loadModule, type TaskModuleEntry } from './modules';

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

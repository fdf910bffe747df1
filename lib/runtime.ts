/**
 * `taskworker/runtime`: what a built tasks bundle runs. The bundle entry that `taskworker dev` and
 * the CDK construct generate imports these, through the package as the user's tasks import it, so
 * the tasks and the runtime share one copy of the library.
 */

export { startTaskWorker } from './run/worker-thread';
export { loadModule, type TaskModuleEntry } from './tasks/modules';

/**
 * `taskworker/testing`: test your tasks without AWS or emulators. `runTask` runs one definition
 * with a context you choose; `createTestSystem` runs the whole system in memory (publish →
 * dispatch → outcome) on a virtual clock.
 */
export type { KeptStep, StepPark } from '../run/executor-types';
export type { Verdict } from '../settle/verdict';
export { type RunTaskOptions, runTask, type TaskRunResult } from './run-task';
export { createTestSystem, type DrainResult, type TestSystem, type TestSystemOptions } from './system';

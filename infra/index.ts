/**
 * `taskworker/cdk`: a release version of a taskworker app in your own CDK app. `aws-cdk-lib` and
 * `constructs` are peer dependencies: your copies are the ones used.
 */
import './peers';

export { type DispatcherCodeProps, dispatcherCode } from './artifact';
export { type DispatcherLogLevel, TaskworkerDispatcher, type TaskworkerDispatcherProps } from './dispatcher-function';
export { TaskworkerMonitoring, type TaskworkerMonitoringProps } from './monitoring';
export { PUBLISHER_ACTIONS, TaskworkerPublisherPolicy, type TaskworkerPublisherPolicyProps } from './publisher-policy';
export { TaskworkerQueues, type TaskworkerQueuesProps } from './queues';
export { SCHEDULE_TARGET_ACTIONS, TaskworkerSchedules, type TaskworkerSchedulesProps } from './recurring-schedules';
export { stackName, TaskworkerStack, type TaskworkerStackProps } from './stack';
export { TaskworkerTables, type TaskworkerTablesProps } from './tables';
export { type GrantPublishOptions, TaskworkerVersion, type TaskworkerVersionProps } from './version';

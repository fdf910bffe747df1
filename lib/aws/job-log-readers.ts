/**
 * Where a version's job log lines are read: a running `taskworker dev`'s log file, or on AWS
 * CloudWatch Logs, where `@aws-sdk/client-cloudwatch-logs` is installed (an optional peer: a
 * publisher does not need it; the function's log group is found with the Lambda client the CLI
 * carries). Undefined where neither is at hand (`jobs logs` then says how).
 */
import { relative } from 'node:path';
import type * as CloudWatchLogs from '@aws-sdk/client-cloudwatch-logs';
import { GetFunctionConfigurationCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { insightsJobLogs } from '../adapters/cloudwatch-logs';
import { fileJobLogs } from '../adapters/file-job-logs';
import type { TaskworkerConfig } from '../config/app-config';
import type { JobLogReader } from '../track/job-logs';
import type { DevState } from './dev-file';

export function versionJobLogs(local: DevState | undefined, config: TaskworkerConfig, version: string): JobLogReader | undefined {
  if (local) return local.logFile ? fileJobLogs(local.logFile, relative(process.cwd(), local.logFile) || local.logFile) : undefined;
  if (process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL) return undefined;
  let sdk: typeof CloudWatchLogs;
  try {
    sdk = require('@aws-sdk/client-cloudwatch-logs') as typeof CloudWatchLogs;
  } catch {
    return undefined;
  }
  const functionName = `${config.app}-${version}-dispatcher`;
  let group: Promise<string> | undefined;
  const logGroup = () => {
    group ??= dispatcherLogGroup(functionName).catch((error: unknown) => {
      group = undefined;
      throw error;
    });
    return group;
  };
  return insightsJobLogs({ sdk, client: new sdk.CloudWatchLogsClient({}) }, logGroup);
}

/** The dispatcher function's log group: its logging config's, else Lambda's default name. */
async function dispatcherLogGroup(functionName: string): Promise<string> {
  const lambda = new LambdaClient({});
  try {
    const fn = await lambda.send(new GetFunctionConfigurationCommand({ FunctionName: functionName }));
    return fn.LoggingConfig?.LogGroup ?? `/aws/lambda/${functionName}`;
  } finally {
    lambda.destroy();
  }
}

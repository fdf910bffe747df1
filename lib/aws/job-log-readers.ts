/**
 * Where a version's job log lines are read: a running `taskworker dev`'s log file, or on AWS
 * CloudWatch Logs, where `@aws-sdk/client-cloudwatch-logs` and `@aws-sdk/client-lambda` (to find
 * the function's log group) are installed (optional peers: a publisher does not need them).
 * Undefined where neither is at hand (`jobs logs` then says how).
 */
import { relative } from 'node:path';
import type * as CloudWatchLogs from '@aws-sdk/client-cloudwatch-logs';
import type * as Lambda from '@aws-sdk/client-lambda';
import { insightsJobLogs } from '../adapters/cloudwatch-logs';
import { fileJobLogs } from '../adapters/file-job-logs';
import type { TaskworkerConfig } from '../config/app-config';
import type { JobLogReader } from '../track/job-logs';
import type { DevState } from './dev-file';

export function versionJobLogs(local: DevState | undefined, config: TaskworkerConfig, version: string): JobLogReader | undefined {
  if (local) return local.logFile ? fileJobLogs(local.logFile, relative(process.cwd(), local.logFile) || local.logFile) : undefined;
  if (process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL) return undefined;
  let sdk: typeof CloudWatchLogs;
  let lambdaSdk: typeof Lambda;
  try {
    sdk = require('@aws-sdk/client-cloudwatch-logs') as typeof CloudWatchLogs;
    lambdaSdk = require('@aws-sdk/client-lambda') as typeof Lambda;
  } catch {
    return undefined;
  }
  const functionName = `${config.app}-${version}-dispatcher`;
  let group: Promise<string> | undefined;
  const logGroup = () => {
    group ??= dispatcherLogGroup(lambdaSdk, functionName).catch((error: unknown) => {
      group = undefined;
      throw error;
    });
    return group;
  };
  return insightsJobLogs({ sdk, client: new sdk.CloudWatchLogsClient({}) }, logGroup);
}

/** The dispatcher function's log group: its logging config's, else Lambda's default name. */
async function dispatcherLogGroup(sdk: typeof Lambda, functionName: string): Promise<string> {
  const { LambdaClient, GetFunctionConfigurationCommand } = sdk;
  const lambda = new LambdaClient({});
  try {
    const fn = await lambda.send(new GetFunctionConfigurationCommand({ FunctionName: functionName }));
    return fn.LoggingConfig?.LogGroup ?? `/aws/lambda/${functionName}`;
  } finally {
    lambda.destroy();
  }
}

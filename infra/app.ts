/**
 * This repository's CDK app: one stack per release version of the example app, built with the
 * public `taskworker/cdk` construct from the same config module as the local runtime.
 *
 *   npx cdk synth  -c version=v1
 *   npx cdk deploy -c version=v2 [-c config=path/to/taskworker.config.ts] [-c alarmTopic=create|<topic ARN>]
 *                                [-c retainData=false] [-c schedules=enabled|disabled]
 */
import { App } from 'aws-cdk-lib';
import { ConfigError, validateVersion } from 'taskworker';
import { TaskworkerStack } from 'taskworker/cdk';

/** Context keys the app reads (`-c key=value`). */
export interface AppContext {
  readonly version?: unknown;
  readonly config?: unknown;
  readonly alarmTopic?: unknown;
  readonly retainData?: unknown;
  readonly schedules?: unknown;
}

/** Builds the app's one stack from `-c version=…` (required) and the config module (relative to the working directory). */
export function buildApp(app: App = new App()): { app: App; stack: TaskworkerStack } {
  const context = (key: keyof AppContext): unknown => app.node.tryGetContext(key);
  const version = validateVersion(context('version'), 'version (cdk -c version=…)');
  const alarmTopicValue = stringContext('alarmTopic', context('alarmTopic'));
  const stack = TaskworkerStack.forVersion(app, {
    config: stringContext('config', context('config')) ?? 'taskworker.config.ts',
    version,
    // The account and region the CLI resolved (none offline): the stack stays environment-agnostic then.
    ...(process.env.CDK_DEFAULT_ACCOUNT && process.env.CDK_DEFAULT_REGION
      ? { env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION } }
      : {}),
    ...(alarmTopicValue === 'create' ? { alarmTopic: 'create' as const } : {}),
    ...(alarmTopicValue !== undefined && alarmTopicValue !== 'create' ? { alarmTopicArn: topicArn(alarmTopicValue) } : {}),
    ...(retainData(context('retainData')) === false ? { retainData: false } : {}),
    ...(context('schedules') !== undefined ? { schedules: schedulesState(context('schedules')) } : {}),
  });
  return { app, stack };
}

function stringContext(key: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0) throw new ConfigError(`${key} (cdk -c ${key}=…)`, value, 'a non-empty string');
  return value;
}

function topicArn(value: string): string {
  if (!/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/.test(value)) {
    throw new ConfigError('alarmTopic (cdk -c alarmTopic=…)', value, '"create" or an SNS topic ARN');
  }
  return value;
}

function retainData(value: unknown): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new ConfigError('retainData (cdk -c retainData=…)', value, 'true or false');
}

function schedulesState(value: unknown): 'enabled' | 'disabled' {
  if (value === 'enabled' || value === 'disabled') return value;
  throw new ConfigError('schedules (cdk -c schedules=…)', value, 'enabled or disabled');
}

if (require.main === module) {
  try {
    buildApp().app.synth();
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}

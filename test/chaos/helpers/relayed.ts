import type { ChildProcess } from 'node:child_process';
import type { LocalStack } from '../../../lib/local/dev';
import { Relay, type RelayHooks } from './relay';

/** A dispatcher process of the local stack that reaches the emulators through its own relays. */
export interface RelayedDispatcher {
  child?: ChildProcess;
  relays: Relay[];
  killed: boolean;
}

/**
 * Starts `d` as a dispatcher process whose SQS and DynamoDB calls go through relays with `hooks`
 * (only its DynamoDB calls with `dynamodbOnly`: a relay costs the test process a hop per call).
 */
export async function startRelayed(local: LocalStack, d: RelayedDispatcher, hooks: RelayHooks, dynamodbOnly = false): Promise<void> {
  const dynamodb = await Relay.start(local.endpoints.dynamodb, hooks);
  const sqs = dynamodbOnly ? undefined : await Relay.start(local.endpoints.sqs, hooks);
  d.relays = sqs ? [sqs, dynamodb] : [dynamodb];
  const index = local.startDispatcher({
    env: { AWS_ENDPOINT_URL_SQS: sqs?.url ?? local.endpoints.sqs, AWS_ENDPOINT_URL_DYNAMODB: dynamodb.url },
  });
  d.child = local.dispatchers[index] as ChildProcess;
}

/** SIGKILLs `d` once and resolves when it has exited; its relays close behind it. False if it was killed already. */
export async function killRelayed(d: RelayedDispatcher): Promise<boolean> {
  if (d.killed) return false;
  d.killed = true;
  const child = d.child as ChildProcess;
  const exited = new Promise<void>((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()),
  );
  child.kill('SIGKILL');
  await exited;
  void Promise.all(d.relays.map((r) => r.close()));
  return true;
}

/**
 * The Lambda client and the adapters on it: the dispatcher function's launcher and doorbell switch,
 * and the operator's doorbell triggers. Apart from clients.ts so only what calls Lambda loads its SDK.
 */
import { LambdaClient, type LambdaClientConfig } from '@aws-sdk/client-lambda';
import { type DoorbellMapping, LambdaDoorbellSwitch, LambdaQueueTriggers } from '../adapters/lambda-doorbells';
import { LambdaLauncher } from '../adapters/lambda-launcher';

/** Pass a ready client or a client config, never both. */
export type LambdaClientOption =
  | { readonly client: LambdaClient; readonly clientConfig?: never }
  | { readonly client?: never; readonly clientConfig?: LambdaClientConfig };

/** The given client, or one made on first use and kept. */
export function lambdaClientFrom(option: LambdaClientOption = {}): () => LambdaClient {
  let client: LambdaClient | undefined;
  return () => {
    client ??= option.client ?? new LambdaClient(option.clientConfig ?? {});
    return client;
  };
}

/** Launches more invocations of the dispatcher function `functionName` (asynchronous invokes). */
export function lambdaLauncher(functionName: string, option: LambdaClientOption = {}): LambdaLauncher {
  return new LambdaLauncher(functionName, lambdaClientFrom(option));
}

/** Turns the doorbell queues' event-source mappings on and off. */
export function lambdaDoorbellSwitch(
  mappings: ReadonlyArray<string | DoorbellMapping>,
  option: LambdaClientOption = {},
): LambdaDoorbellSwitch {
  return new LambdaDoorbellSwitch(mappings, lambdaClientFrom(option));
}

/** Switches one queue's doorbell trigger (pause, resume); `functionOf` names a queue's doorbell function. */
export function lambdaQueueTriggers(functionOf: (queue: string) => string, option: LambdaClientOption = {}): LambdaQueueTriggers {
  return new LambdaQueueTriggers(functionOf, lambdaClientFrom(option));
}

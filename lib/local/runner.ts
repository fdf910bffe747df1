/**
 * The local stand-in for the Lambda runtime: one child process per dispatcher, like one Lambda
 * container. It loads the built handler (`index.js` beside this file) and reports each settled
 * batch and invocation to its parent. Back to back (the default), it invokes the handler again as
 * soon as an invocation ends. On demand (`TASKWORKER_LOCAL_INVOKE=on-demand`), like a Lambda
 * container, it waits for its parent — the local Lambda service (lib/local/wake.ts) — to invoke it
 * with an event (the schedule's, a doorbell trigger's SQS event, a scale-out's).
 */

/** What the local Lambda service sends a container to invoke it. */
export interface InvokeRequest {
  readonly type: 'invoke';
  readonly id: number;
  readonly event: unknown;
  readonly timeoutSeconds: number;
}

import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import type { BatchStart, DispatcherFunction, DispatcherFunctionOptions } from '../dispatch/dispatcher-deps';
import type { BatchReport, DispatcherSummary } from '../settle/report';

export type RunnerMessage =
  | { readonly type: 'ready' }
  /** On demand: an invocation ended; `result` is what the handler returned. */
  | { readonly type: 'invoked'; readonly id: number; readonly result?: unknown; readonly error?: string }
  /** On demand: the scheduled fleet turns the doorbells' triggers on or off, those named in `off` off either way (working a backlog). */
  | { readonly type: 'doorbells'; readonly on: boolean; readonly off?: readonly string[] }
  /** On demand: a scheduled invocation asks for more invocations of the dispatcher function. */
  | { readonly type: 'launch'; readonly count: number; readonly event: object }
  | { readonly type: 'started'; readonly start: BatchStart }
  | { readonly type: 'batch'; readonly report: BatchReport }
  | { readonly type: 'invocation'; readonly summary: DispatcherSummary }
  | { readonly type: 'error'; readonly message: string };

const timeoutSeconds = Number(process.env.TASKWORKER_LOCAL_TIMEOUT_SECONDS ?? 300);
const send = (message: RunnerMessage) => {
  if (process.connected) process.send?.(message);
};

function lambdaContext(deadline: number): Context {
  const functionName = process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'taskworker-dispatcher-local';
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION ?? 'us-east-1'}:000000000000:function:${functionName}`,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${process.pid}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

async function main(): Promise<void> {
  let stopping = false;
  let dispatcher: DispatcherFunction | undefined;
  let stopWaiting = () => {};
  const stop = () => {
    stopping = true;
    dispatcher?.stop();
    stopWaiting();
  };
  // Before loading the handler: a stop that arrives while index.js is still loading (a busy
  // machine, a short run) must end the loop cleanly, not kill the process with the signal. The
  // parent sends SIGTERM only after 'ready'.
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
  const requests: InvokeRequest[] = [];
  let requested = () => {};
  process.on('message', (message: { type?: string }) => {
    if (message?.type === 'stop') stop();
    if (message?.type === 'invoke') {
      requests.push(message as InvokeRequest);
      requested();
    }
  });
  send({ type: 'ready' });
  const handlerModule = require(join(__dirname, 'index.js')) as {
    createDispatcherFunction: (options: DispatcherFunctionOptions) => DispatcherFunction;
  };
  const onDemand = process.env.TASKWORKER_LOCAL_INVOKE === 'on-demand';
  dispatcher = handlerModule.createDispatcherFunction({
    observer: {
      onBatch: (report) => send({ type: 'batch', report }),
      onBatchStart: (start) => send({ type: 'started', start }),
    },
    // Scaling out asks the local Lambda service, as the Lambda API would be asked in AWS.
    ...(onDemand
      ? {
          launcher: {
            launch: async (count: number, event: object) => {
              send({ type: 'launch', count, event });
              return count;
            },
          },
          doorbells: {
            set: async (on: boolean, off: readonly string[] = []) => send({ type: 'doorbells', on, off }),
          },
        }
      : {}),
  });
  while (onDemand && !stopping) {
    const request = requests.shift();
    if (!request) {
      await new Promise<void>((resolve) => {
        requested = resolve;
        stopWaiting = resolve;
      });
      continue;
    }
    try {
      const result = await dispatcher.handler(request.event, lambdaContext(Date.now() + request.timeoutSeconds * 1000));
      send({ type: 'invoked', id: request.id, result });
      send({ type: 'invocation', summary: result });
      if (result.memoryStop) stopping = true;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      send({ type: 'invoked', id: request.id, error: message });
      send({ type: 'error', message });
    }
  }
  while (!onDemand && !stopping) {
    try {
      const summary = await dispatcher.handler({ source: 'taskworker.local' }, lambdaContext(Date.now() + timeoutSeconds * 1000));
      send({ type: 'invocation', summary });
      // Past its resident-set limit a dispatcher stops, as Kale's worker did: the process (this
      // container) exits cleanly once its batches are settled; `taskworker dev` reports it.
      if (summary.memoryStop) stopping = true;
    } catch (error) {
      send({ type: 'error', message: error instanceof Error ? error.message : String(error) });
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  await dispatcher.close();
  process.exit(0);
}

void main();

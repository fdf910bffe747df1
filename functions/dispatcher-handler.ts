import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { doorbellMappingsFromEnv } from '../lib/adapters/lambda-doorbells';
import { lambdaDoorbellSwitch, lambdaLauncher } from '../lib/aws/lambda-clients';
import { trackingFor } from '../lib/aws/wiring';
import type { DispatcherFunction, DispatcherFunctionOptions } from '../lib/dispatch/dispatcher-deps';
import { DispatcherRuntime, queueUrlsFromEnv } from '../lib/invocation/dispatcher-runtime';
import { sqsRecordsOf } from '../lib/invocation/doorbell';
import { canScaleOut, invocationRole } from '../lib/invocation/scaling';
import type { DispatcherSummary } from '../lib/settle/report';

export type { DispatcherFunction, DispatcherFunctionOptions } from '../lib/dispatch/dispatcher-deps';

import { ConfigError } from '../lib/errors';
import type { Logger as LoggerPort } from '../lib/ports';
import { loadTaskBundle } from '../lib/tasks/bundle';
import type { WorkerPlace } from '../lib/track/worker-registry';
import { combineObservers, createDispatcherMetrics } from './metrics';

/**
 * The dispatcher Lambda: loops until the invocation's remaining time (minus the settle margin)
 * is spent, then returns a summary. The local runtime invokes this same handler.
 */
export function createDispatcherFunction(options: DispatcherFunctionOptions = {}): DispatcherFunction {
  const env = options.env ?? process.env;
  const logger = new Logger({ serviceName: 'taskworker-dispatcher', logLevel: (env.TASKWORKER_LOG_LEVEL as 'INFO' | undefined) ?? 'INFO' });
  // EMF metrics: flushed per settled batch (an invocation lasts minutes), and per invocation by logMetrics.
  const metrics = createDispatcherMetrics({ env });
  let runtime: DispatcherRuntime | undefined;
  let stopping = new AbortController();

  const init = (): DispatcherRuntime => {
    const version = env.TASKWORKER_VERSION;
    if (!version) throw new ConfigError('TASKWORKER_VERSION', version, 'the release version this dispatcher serves');
    const bundle = loadTaskBundle(env.TASKWORKER_TASKS_BUNDLE ?? join(__dirname, 'tasks.cjs'));
    const urls = queueUrlsFromEnv(env.TASKWORKER_QUEUE_URLS);
    const tracking = trackingFor(bundle.config, { jobs: env.TASKWORKER_JOBS_TABLE, stats: env.TASKWORKER_STATS_TABLE });
    // Scheduled invocations start more of this same function when a backlog builds, if its
    // reserved concurrency leaves room beyond the schedule's own overlap.
    const maxConcurrency = Number(env.TASKWORKER_MAX_CONCURRENCY) || bundle.config.dispatcher.maxConcurrency;
    const scalesOut = canScaleOut(maxConcurrency, bundle.config.dispatcher.timeoutSeconds);
    const functionName = env.AWS_LAMBDA_FUNCTION_NAME;
    const mappings = doorbellMappingsFromEnv(env.TASKWORKER_DOORBELL_MAPPINGS);
    const doorbells = options.doorbells ?? (mappings.length > 0 ? lambdaDoorbellSwitch(mappings) : undefined);
    const created = new DispatcherRuntime({
      bundle,
      version,
      logger: structured(logger),
      tracking,
      ...(urls ? { urls } : {}),
      // Bundled with the artifact like the other clients, and evaluated only when a claim check first
      // comes (it would add to every cold start); the bucket defaults to the one the queue URLs name.
      payloads: {
        sdk: () => require('@aws-sdk/client-s3'),
        ...(env.TASKWORKER_PAYLOAD_BUCKET ? { bucket: env.TASKWORKER_PAYLOAD_BUCKET } : {}),
      },
      observer: combineObservers(metrics.observer, options.observer),
      ...(doorbells ? { doorbells } : {}),
      ...(options.launcher
        ? { launcher: options.launcher, maxConcurrency }
        : functionName && scalesOut
          ? { launcher: lambdaLauncher(functionName), maxConcurrency }
          : {}),
    });
    created.warm();
    return created;
  };

  const run = async (event: unknown, context: Context): Promise<DispatcherSummary> => {
    runtime ??= init();
    if (stopping.signal.aborted) stopping = new AbortController();
    const deadline = Date.now() + context.getRemainingTimeInMillis();
    // A doorbell queue's SQS trigger: its batch first, then the loop; Lambda reads batchItemFailures.
    const records = sqsRecordsOf(event);
    const summary = records
      ? await runtime.ring(records, deadline, stopping.signal, placeOf(context))
      : await runtime.invoke(deadline, stopping.signal, invocationRole(event), [], placeOf(context));
    metrics.recordInvocation(summary);
    if (summary.memoryStop) {
      // Like Kale's worker past its RSS limit: start afresh. The next invocation builds new
      // clients and worker threads; the old threads' memory goes with them.
      const spent = runtime;
      runtime = undefined;
      await spent.close();
    }
    return summary;
  };

  return {
    handler: middy(run)
      .use(injectLambdaContext(logger))
      .use(logMetrics(metrics.metrics, { captureColdStartMetric: true })) as unknown as DispatcherFunction['handler'],
    stop: () => stopping.abort(),
    close: async () => {
      await runtime?.close();
    },
  };
}

/** Where this invocation runs, for the workers view: its function, request and container (log stream; `local/<pid>` in `taskworker dev`). */
function placeOf(context: Context): WorkerPlace {
  return { function: context.functionName, requestId: context.awsRequestId, container: context.logStreamName };
}

/** Powertools Logger behind the library's logger port. */
function structured(logger: Logger): LoggerPort {
  const level =
    (write: (message: string, ...extra: Array<Record<string, unknown>>) => void) => (message: string, fields?: Record<string, unknown>) =>
      fields ? write(message, fields) : write(message);
  return {
    debug: level(logger.debug.bind(logger)),
    info: level(logger.info.bind(logger)),
    warn: level(logger.warn.bind(logger)),
    error: level(logger.error.bind(logger)),
  };
}

const dispatcher = createDispatcherFunction();
// Lambda sends SIGTERM before shutting a container down (when extensions are registered).
process.once('SIGTERM', () => dispatcher.stop());

export const handler = dispatcher.handler;

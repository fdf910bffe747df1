import { timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { secureHeaders } from 'hono/secure-headers';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { TaskworkerError } from '../../lib/errors';
import { type ArchiveFilter, countArchived, listArchived, replayArchived } from '../../lib/operate/archive';
import { explainAwsError } from '../../lib/operate/aws-errors';
import { redriveDeadLetters } from '../../lib/operate/dead-letters';
import { listEvents } from '../../lib/operate/events';
import { cancelFlow, cancelJob, flowDepsOf, flowOf, jobRelations, listTaggedPage, tagProblem } from '../../lib/operate/flow-commands';
import { retryJob, runJobNow } from '../../lib/operate/job-actions';
import { countJobStates } from '../../lib/operate/job-counts';
import { BadCursorError, listJobsPage } from '../../lib/operate/job-pages';
import { type OperatorContext, VersionNotFoundError } from '../../lib/operate/operator-context';
import { controlQueue } from '../../lib/operate/queue-controls';
import { lookUpJob } from '../../lib/operate/rejections';
import { statsHistory, throughput, versionStatus } from '../../lib/operate/version-status';
import { listWorkers } from '../../lib/operate/worker-views';
import { Publisher } from '../../lib/publish/publisher';
import { ControlValueError, parsePriority, parseSlaSeconds } from '../../lib/track/controls';
import { MAX_SCHEDULE_SECONDS } from '../../lib/track/due';
import { JOB_STATES, type JobRecord, type JobState } from '../../lib/track/model';
import { taskStatsKey } from '../../lib/track/stats';
import { ARCHIVE_REASONS } from '../../lib/wire/archive-reasons';
import {
  API_ROUTES,
  type Api,
  type ApiErrorBody,
  type ApiPath,
  type ApiRequest,
  type ApiResponse,
  PAGE_META,
  TOKEN_HEADER,
} from '../api-types';
import { archiveFilter, integerParam, RequestError, stringParam } from './request-params';
import type { UiOptions } from './ui-options';

/** The cookie a browser on another host keeps the token in once it opened the printed URL. */
const TOKEN_COOKIE = 'taskworker_token';

const VERSION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const ASSETS: Readonly<Record<string, string>> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

/**
 * What a route's handler reads, by the field names the shared table gives its request, not yet
 * checked (the handler checks each): a GET's query strings, a POST's JSON body fields.
 */
type RouteInput<P extends ApiPath> = Api[P]['method'] extends 'GET'
  ? { readonly [K in keyof ApiRequest<P>]?: string }
  : { readonly [K in keyof ApiRequest<P>]?: unknown };

/** A refusal as the page reads it ({@link ApiErrorBody}): the status, and one sentence. */
/** The largest kept result the job page shows in full; a larger one is named with its size (`jobs wait ID --json` prints it). */
export const PAGE_RESULT_BYTES = 1024 * 1024;

/**
 * The record with a result the dispatcher kept in S3 read back into `result` (up to
 * {@link PAGE_RESULT_BYTES}; one GetObject): the page shows it as it shows a small one. One that
 * cannot be read leaves the record as it is, with why in `resultUnread`.
 */
async function withStoredResult(ctx: OperatorContext, job: JobRecord): Promise<{ job: JobRecord; resultUnread?: string }> {
  const ref = job.resultRef;
  if (!ref || job.result !== undefined || !ctx.readStoredResult) return { job };
  if (ref.bytes > PAGE_RESULT_BYTES) return { job, resultUnread: `${ref.bytes} bytes: more than the page shows` };
  try {
    return { job: { ...job, result: JSON.stringify(await ctx.readStoredResult(ref)) } };
  } catch (error) {
    return { job, resultUnread: error instanceof Error ? error.message : String(error) };
  }
}

function refuse(c: Context, error: string, status: ContentfulStatusCode): Response {
  const body: ApiErrorBody = { error };
  return c.json(body, status);
}

const describeError = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

function sameToken(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookieToken(c: Context): string | undefined {
  const header = c.req.header('cookie') ?? '';
  for (const part of header.split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === TOKEN_COOKIE) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

/** The page: a shell with the token and mode; everything shown is fetched as JSON and set as text. */
function pageHtml(options: UiOptions): string {
  const meta = (name: string, value: string) => `<meta name="${name}" content="${value.replace(/[^A-Za-z0-9_-]/g, '')}">`;
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>taskworker · ${options.app.replace(/[^A-Za-z0-9_-]/g, '')}</title>`,
    meta(PAGE_META.token, options.token),
    meta(PAGE_META.mode, options.readOnly ? 'read-only' : 'read-write'),
    '<link rel="stylesheet" href="/assets/app.css">',
    '</head><body><div id="app"></div><script type="module" src="/assets/app.js"></script></body></html>',
  ].join('\n');
}

/**
 * The dashboard's HTTP server: the page, its assets and a JSON API over the operator library
 * (the same functions the CLI's status, jobs, archive and dlq commands call). Reads are GETs;
 * every action is a POST that needs the per-process token in a header (another site's page can
 * neither read the token nor send that header without a CORS answer this server never gives), is
 * refused in read-only mode, and is logged.
 */
export function createUiApp(options: UiOptions): Hono {
  const app = new Hono();
  const contexts = new Map<string, Promise<OperatorContext>>();

  const context = async (version: string | undefined): Promise<OperatorContext> => {
    const wanted = version === undefined || version === '' ? options.defaultVersion : version;
    if (!VERSION_PATTERN.test(wanted)) throw new RequestError(`version ${JSON.stringify(wanted)}: not a version name`);
    let found = contexts.get(wanted);
    if (!found) {
      found = options.contextFor(wanted);
      contexts.set(wanted, found);
      found.catch(() => contexts.delete(wanted));
    }
    return found;
  };
  const queueNames = (ctx: OperatorContext, queue: string | undefined) => {
    if (queue === undefined || queue === '') return ctx.config.queues.map((q) => q.name);
    if (!ctx.config.queues.some((q) => q.name === queue)) throw new RequestError(`queue ${JSON.stringify(queue)}: no such queue`);
    return [queue];
  };
  const body = async (c: Context): Promise<Record<string, unknown>> => {
    const parsed: unknown = await c.req.json().catch(() => {
      throw new RequestError('the request body is not JSON');
    });
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new RequestError('the request body must be a JSON object');
    return parsed as Record<string, unknown>;
  };
  /**
   * Registers a route of the shared table: the method {@link API_ROUTES} gives it, its request
   * read by the table's field names, and its answer held by tsc to the table's response type.
   */
  const route = <P extends ApiPath>(path: P, answer: (input: RouteInput<P>) => Promise<ApiResponse<P>>): void => {
    app.on(API_ROUTES[path], path, async (c) => {
      const input = API_ROUTES[path] === 'GET' ? c.req.query() : await body(c);
      return c.json(await answer(input as RouteInput<P>));
    });
  };

  app.use(
    '*',
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'none'"],
        frameAncestors: ["'none'"],
        formAction: ["'self'"],
      },
      referrerPolicy: 'no-referrer',
    }),
  );
  app.use('*', async (c, next) => {
    if (options.acceptsHost && !options.acceptsHost(c.req.header('host') ?? '')) {
      return refuse(c, `host ${JSON.stringify(c.req.header('host') ?? '')} is not this dashboard's`, 403);
    }
    if (options.tokenForReads) {
      const fromQuery = c.req.query('token');
      if (c.req.method === 'GET' && c.req.path === '/' && sameToken(fromQuery, options.token)) {
        c.header('set-cookie', `${TOKEN_COOKIE}=${options.token}; HttpOnly; SameSite=Strict; Path=/`);
        return c.redirect('/', 303);
      }
      if (!sameToken(cookieToken(c), options.token) && !sameToken(c.req.header(TOKEN_HEADER), options.token)) {
        return refuse(c, 'this dashboard needs its token: open the URL taskworker ui printed', 401);
      }
    }
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      if (!sameToken(c.req.header(TOKEN_HEADER), options.token)) return refuse(c, `missing or wrong ${TOKEN_HEADER} header`, 403);
      if (options.readOnly) return refuse(c, 'read-only: this dashboard was started with --read-only', 403);
    }
    await next();
    return undefined;
  });
  app.use('/api/*', bodyLimit({ maxSize: 512 * 1024, onError: (c) => refuse(c, 'the request body is over 512 KiB', 413) }));
  app.onError((error, c) => {
    if (error instanceof RequestError) return refuse(c, error.message, error.status);
    if (error instanceof VersionNotFoundError) return refuse(c, error.message, 404);
    if (error instanceof BadCursorError || error instanceof TaskworkerError) return refuse(c, `${error.name}: ${error.message}`, 400);
    // The AWS failures an operator meets first, in the CLI's plain words (no region, no credentials, …).
    const text = explainAwsError(error) ?? describeError(error);
    options.log(`error: ${text}`);
    return refuse(c, text, 500);
  });

  app.get('/', (c) => c.html(pageHtml(options)));
  app.get('/favicon.ico', (c) => c.body(null, 204));
  app.get('/assets/:file', async (c) => {
    const file = c.req.param('file');
    const type = ASSETS[file];
    if (!type || !options.assetsDir) return c.notFound();
    const content = await readFile(join(options.assetsDir, file)).catch(() => undefined);
    if (!content) return c.notFound();
    return c.body(content, 200, { 'content-type': type, 'cache-control': 'no-cache' });
  });

  route('/api/meta', async (query) => {
    const ctx = await context(query.version);
    const tasks = await options.tasks();
    return {
      app: options.app,
      version: ctx.version,
      versions: [...new Set([options.defaultVersion, ...(await options.versions())])].sort(),
      readOnly: options.readOnly,
      local: options.dispatchers !== undefined,
      states: JOB_STATES,
      reasons: ARCHIVE_REASONS,
      queues: ctx.config.queues.map((q) => ({
        name: q.name,
        priority: q.priority,
        slaSeconds: q.slaSeconds,
        tracking: q.tracking,
        maxReceiveCount: q.maxReceiveCount,
      })),
      tasks: tasks.map((t) => ({ name: t.name, queue: t.queue, maxRetries: t.maxRetries, validates: t.validate !== undefined })),
    };
  });

  route('/api/status', async (query) => {
    const ctx = await context(query.version);
    const status = await versionStatus(ctx);
    const dispatchers = options.dispatchers?.();
    // CloudWatch is an extra: a refusal (no permission) leaves the overview working without it.
    const invocations = options.invocations
      ? await options.invocations(ctx.version).catch((error: unknown) => ({ unavailable: describeError(error) }))
      : undefined;
    return {
      ...status,
      now: ctx.clock.now(),
      ...(dispatchers ? { localDispatchers: dispatchers } : {}),
      ...(invocations ? { invocations } : {}),
    };
  });

  route('/api/throughput', async (query) => {
    const ctx = await context(query.version);
    return throughput(ctx, integerParam('minutes', query.minutes, 60, 1, 180));
  });

  route('/api/history', async (query) => {
    const ctx = await context(query.version);
    const key = query.task ? taskStatsKey(query.task) : (queueNames(ctx, query.queue ?? '?')[0] as string);
    return statsHistory(ctx, key, integerParam('days', query.days, 14, 1, 90));
  });

  route('/api/jobs', async (query) => {
    const ctx = await context(query.version);
    const state = query.state ?? 'archived';
    if (!(JOB_STATES as readonly string[]).includes(state))
      throw new RequestError(`state ${JSON.stringify(state)}: expected one of ${JOB_STATES.join(', ')}`);
    const { task, cursor, tag } = query;
    if (tag) {
      const problem = tagProblem(tag);
      if (problem) throw new RequestError(`tag ${JSON.stringify(tag.slice(0, 80))}: ${problem}`);
      return listTaggedPage(ctx.jobs, tag, integerParam('limit', query.limit, 25, 1, 200), cursor || undefined);
    }
    return listJobsPage(ctx, {
      state: state as JobState,
      queues: queueNames(ctx, query.queue),
      ...(task ? { task } : {}),
      limit: integerParam('limit', query.limit, 25, 1, 200),
      ...(cursor ? { cursor } : {}),
    });
  });

  // The job id travels as a query or body field, not a path segment: ids may hold `/`, `?`, `#`, `%`.
  route('/api/job', async (query) => {
    const ctx = await context(query.version);
    const id = query.id;
    if (!id) throw new RequestError('id: required');
    const { job, filed } = await lookUpJob(ctx.jobs, id);
    // Messages that carried the id but never ran as it: listed apart from the id's own record.
    const filedUnderMessageIds = filed.length > 0 ? { filedUnderMessageIds: filed } : {};
    if (!job) {
      if (filed.length > 0) return filedUnderMessageIds;
      throw new RequestError(
        `no job ${id} in version ${ctx.version} (unknown id, expired by its retention, or its queue is not tracked)`,
        404,
      );
    }
    // The jobs table keeps a payload's digest, not the payload: an archived job's is in the archive.
    const [[archived], relations] = await Promise.all([
      job.state === 'archived' ? listArchived(ctx, { jobId: job.jobId }, 1) : [],
      jobRelations(ctx.jobs, job),
    ]);
    const inFlow = relations.dependencies !== undefined || relations.dependents !== undefined;
    return {
      ...(await withStoredResult(ctx, job)),
      ...(archived ? { archived } : {}),
      ...(inFlow ? { relations } : {}),
      ...filedUnderMessageIds,
    };
  });

  route('/api/flow', async (query) => {
    const ctx = await context(query.version);
    const id = query.id;
    if (!id) throw new RequestError('id: required');
    const flow = await flowOf(ctx.jobs, id);
    if (!flow) throw new RequestError(`no job ${id} in version ${ctx.version}`, 404);
    return flow;
  });

  route('/api/jobs/counts', async (query) => {
    const ctx = await context(query.version);
    return countJobStates(ctx, queueNames(ctx, query.queue));
  });

  route('/api/workers', async (query) => {
    const ctx = await context(query.version);
    if (!ctx.workers) return { now: ctx.clock.now(), live: 0, vanished: 0, workers: [] };
    return listWorkers({ workers: ctx.workers, jobs: ctx.jobs, clock: ctx.clock });
  });

  // `taskworker events`: subscribers from the task definitions (as the publish form's), counts from the version's stats.
  route('/api/events', async (query) => {
    const ctx = await context(query.version);
    return listEvents(ctx.config, ctx.version, await options.tasks(), ctx.stats, ctx.clock.now());
  });

  route('/api/archive', async (query) => {
    const ctx = await context(query.version);
    return listArchived(ctx, archiveFilter(query), integerParam('limit', query.limit, 50, 1, 500));
  });

  route('/api/archive/count', async (query) => {
    const ctx = await context(query.version);
    return countArchived(ctx, archiveFilter(query));
  });

  route('/api/archive/replay', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const ids = input.messageIds;
    if (ids !== undefined && (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === 'string'))) {
      throw new RequestError('messageIds: expected a non-empty list of message ids');
    }
    const filter: ArchiveFilter = { ...archiveFilter(input), ...(ids ? { messageIds: ids as string[] } : {}) };
    const limit = integerParam('limit', input.limit === undefined ? undefined : String(input.limit), 10_000, 1, 100_000);
    const result = await replayArchived(ctx, filter, limit);
    options.log(`replay ${JSON.stringify(filter)} in ${ctx.version}: ${result.replayed} replayed, ${result.skipped.length} skipped`);
    return result;
  });

  route('/api/dlq/redrive', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const queue = stringParam('queue', input.queue);
    const results = await redriveDeadLetters(ctx, queue === undefined ? undefined : (queueNames(ctx, queue)[0] as string));
    options.log(`dlq redrive ${queue ?? 'all queues'} in ${ctx.version}: ${results.map((r) => `${r.queue} ${r.messages}`).join(', ')}`);
    return results;
  });

  route('/api/job/cancel', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const id = stringParam('id', input.id);
    if (!id) throw new RequestError('id: required');
    // Its dependents learn it: counted as a failed dependency (archived, or run if they ignore it).
    const result = await cancelJob(flowDepsOf(ctx), id);
    options.log(`cancel ${id} in ${ctx.version}: ${result.outcome}`);
    return result;
  });

  // The CLI's `archive replay`, for the one job: its archived message back to its queue, attempts reset.
  route('/api/job/retry', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const id = stringParam('id', input.id);
    if (!id) throw new RequestError('id: required');
    const result = await retryJob(ctx, id);
    options.log(`retry ${id} in ${ctx.version}: ${result.outcome}${result.outcome === 'skipped' ? ` (${result.why})` : ''}`);
    return result;
  });

  // A job parked until later, run now by the sweep's own path (lib/operate/job-actions.ts).
  route('/api/job/run-now', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const id = stringParam('id', input.id);
    if (!id) throw new RequestError('id: required');
    const result = await runJobNow(ctx, id);
    options.log(`run now ${id} in ${ctx.version}: ${result.outcome}`);
    return result;
  });

  route('/api/flow/cancel', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const id = stringParam('id', input.id);
    if (!id) throw new RequestError('id: required');
    const result = await cancelFlow(flowDepsOf(ctx), id);
    options.log(
      `cancel flow of ${id} in ${ctx.version}: ${result.cancelled.length} cancelled, ${result.notCancelled.length} not cancelled${result.unknown ? ' (no such job)' : ''}`,
    );
    return result;
  });

  route('/api/queue/control', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const queue = stringParam('queue', input.queue) ?? '';
    if (!ctx.controls) throw new RequestError(`version ${ctx.version} keeps no controls (no stats table)`);
    const action = input.action;
    if (action !== 'pause' && action !== 'resume' && action !== 'set' && action !== 'reset')
      throw new RequestError(`action ${JSON.stringify(action)}: expected pause, resume, set or reset`);
    let outcome: Awaited<ReturnType<typeof controlQueue>>;
    try {
      // The dispatchers switch a paused queue's doorbell trigger off themselves at their next scheduled invocation.
      outcome = await controlQueue(
        { config: ctx.config, controls: ctx.controls, now: () => ctx.clock.now() },
        queue,
        action === 'set'
          ? {
              kind: 'set',
              ...(input.priority !== undefined ? { priority: parsePriority(input.priority, 'priority') } : {}),
              ...(input.slaSeconds !== undefined ? { slaSeconds: parseSlaSeconds(input.slaSeconds, 'slaSeconds') } : {}),
            }
          : { kind: action },
      );
    } catch (error) {
      if (error instanceof ControlValueError) throw new RequestError(error.message);
      throw error;
    }
    options.log(`queue ${action} ${queue} in ${ctx.version}: revision ${outcome.revision}`);
    return outcome;
  });

  route('/api/publish', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const task = stringParam('task', input.task);
    if (!task) throw new RequestError('task: required');
    const tasks = await options.tasks();
    const queue = stringParam('queue', input.queue);
    if (queue === undefined && !tasks.some((t) => t.name === task))
      throw new RequestError(`task ${JSON.stringify(task)}: not defined in this app`);
    const delay = input.delaySeconds;
    if (delay !== undefined && (typeof delay !== 'number' || !Number.isInteger(delay) || delay < 0 || delay > MAX_SCHEDULE_SECONDS)) {
      throw new RequestError(`delaySeconds ${JSON.stringify(delay)}: expected an integer 0..${MAX_SCHEDULE_SECONDS}`);
    }
    const validate = tasks.find((t) => t.name === task)?.validate;
    if (validate) {
      try {
        validate(input.payload ?? null);
      } catch (error) {
        throw new RequestError(`payload refused by ${task}'s validate: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const publisher = new Publisher({
      config: ctx.config,
      version: ctx.version,
      tasks,
      queues: ctx.queues,
      urls: ctx.urls,
      jobs: ctx.jobs,
      clock: ctx.clock,
    });
    const published = await publisher.publish(task, input.payload ?? null, {
      ...(queue !== undefined ? { queue } : {}),
      ...(typeof delay === 'number' && delay > 0 ? { delaySeconds: delay } : {}),
      ...(input.appData !== undefined ? { appData: input.appData } : {}),
    });
    options.log(`publish ${task} in ${ctx.version}: job ${published.jobId} to ${published.queue}`);
    return published;
  });

  return app;
}

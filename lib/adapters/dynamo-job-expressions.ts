/**
 * The claim's and the completion's expressions: every `full` tracked job writes both, so their
 * text and names are built once per shape (which optional fields a job has) and only the values
 * are filled in per job.
 *
 * Conditions are written without grouping parentheses (DynamoDB evaluates AND before OR, so
 * `A OR B AND C` is `A OR (B AND C)`): the same rule, distributed over its terms. DynamoDB does not
 * mind either way; dynalite, the emulator the benchmarks and `taskworker dev` run on, parses with
 * a backtracking parser that took ~0.7 ms of CPU for the claim's old grouped condition and takes a
 * fifth of that for this one (bench:e2e's profile, issue 33).
 */

import { DUE_GATED_STATES, TRANSITIONS } from '../policy/job-rules';
import type { ClaimRequest, Completion, HistoryEntry, JobRecord } from '../track/job-record';
import { Expression, type Template } from './dynamo-values';

/** An expression built once: its text, and the template that fills its values per request. */
export interface BuiltExpression<S extends string> {
  readonly condition: string;
  readonly update: string;
  readonly template: Template<S>;
}

/** Built expressions by shape; the shapes are few (which optional fields a job carries). */
function cached<S extends string>(cache: Map<string, BuiltExpression<S>>, key: string, build: () => BuiltExpression<S>) {
  let built = cache.get(key);
  if (!built) {
    built = build();
    cache.set(key, built);
  }
  return built;
}

/** What only a parked job's item carries: gone once it is handed over, claimed or cancelled. */
export const PARKED_ONLY = ['dueShard', 'body', 'attributes', 'sweepLease'] as const;

export type ClaimSlot =
  | 'payload'
  | 'task'
  | 'payloadDigest'
  | 'queue'
  | 'version'
  | 'publishedAt'
  | 'now'
  | 'due'
  | 'worker'
  | 'leaseUntil'
  | 'claimId'
  | 'memberOf'
  | 'tags'
  | 'event'
  | 'startBy'
  | 'key'
  | 'entry'
  | 'expiresAt';

/** The optional fields of a claim, which change its SET list. */
function claimShape(r: ClaimRequest) {
  return {
    claimId: r.claimId !== undefined,
    memberOf: r.memberOf !== undefined,
    tags: r.tags !== undefined && r.tags.length > 0,
    event: r.event !== undefined,
    startBy: r.startBy !== undefined,
    key: r.key !== undefined,
    payload: r.payload !== undefined,
  };
}

const claims = new Map<string, BuiltExpression<ClaimSlot>>();

/**
 * A claim: a fresh attempt (`started`) on a job that is new, queued, retrying, or scheduled and
 * due (or announced: its message was held by SQS), of the same task and payload; or `took-over`,
 * on a running job of the same task and payload whose lease lapsed. It sets the job running with
 * the attempt one higher (`ADD`: 1 on a new record), the lease, and the history entry.
 */
export function claimExpression(what: 'started' | 'took-over', r: ClaimRequest): BuiltExpression<ClaimSlot> {
  const shape = claimShape(r);
  const key = `${what}${Object.entries(shape)
    .filter(([, has]) => has)
    .map(([field]) => ` ${field}`)
    .join('')}`;
  return cached(claims, key, () => {
    const e = new Expression();
    const n = (attribute: string) => e.name(attribute);
    const sameJob = `${n('task')} = ${e.slot('task')} AND ${n('payloadDigest')} = ${e.slot('payloadDigest')}`;
    const condition = what === 'started' ? startCondition(e, sameJob) : takeOverCondition(e, sameJob);
    const sets = claimSets(e, shape, 'keep');
    const removes = [...PARKED_ONLY, 'announced', 'queueState', ...(shape.claimId ? [] : ['leaseClaim'])].map(n);
    return {
      condition,
      update: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')} ADD ${n('attempt')} ${e.value(1)}`,
      template: e.template<ClaimSlot>(),
    };
  });
}

/**
 * A claim's SET list. `keep`: on a record that may be there, what a first claim wrote stays
 * (publish time, first start, payload) and the history is appended to; `create`: the record is new.
 */
function claimSets(e: Expression, shape: ReturnType<typeof claimShape>, on: 'keep' | 'create'): string[] {
  const n = (attribute: string) => e.name(attribute);
  const first = (attribute: string, slot: ClaimSlot) =>
    on === 'keep' ? `${n(attribute)} = if_not_exists(${n(attribute)}, ${e.slot(slot)})` : `${n(attribute)} = ${e.slot(slot)}`;
  const optional = (['memberOf', 'tags', 'event', 'startBy', 'key'] as const).filter((field) => shape[field]);
  const history = n('history');
  return [
    `${n('state')} = ${e.value('running')}`,
    ...(['task', 'payloadDigest', 'queue', 'version'] as const).map((field) => `${n(field)} = ${e.slot(field)}`),
    first('publishedAt', 'publishedAt'),
    first('firstStartedAt', 'now'),
    `${n('lastStartedAt')} = ${e.slot('now')}`,
    `${n('updatedAt')} = ${e.slot('now')}`,
    `${n('leaseOwner')} = ${e.slot('worker')}`,
    `${n('leaseUntil')} = ${e.slot('leaseUntil')}`,
    ...(shape.claimId ? [`${n('leaseClaim')} = ${e.slot('claimId')}`] : []),
    ...optional.map((field) => `${n(field)} = ${e.slot(field)}`),
    // The first claim's: a later one (a retry, a takeover) leaves it as it is.
    ...(shape.payload ? [first('payload', 'payload')] : []),
    on === 'keep'
      ? `${history} = list_append(if_not_exists(${history}, ${e.value([])}), ${e.slot('entry')})`
      : `${history} = ${e.slot('entry')}`,
    `${n('expiresAt')} = ${e.slot('expiresAt')}`,
  ];
}

const newClaims = new Map<string, BuiltExpression<ClaimSlot>>();

/**
 * The claim of a job that has no record yet: the record {@link claimExpression} would write on a
 * new job (attempt 1), on condition that there is none. Nothing is kept, appended or removed, so it
 * is about half the text, names and values of the full claim (each request's parse and (de)serialize,
 * in the SDK and the service, follows them); the full claim follows when a record is there.
 */
export function newClaimExpression(r: ClaimRequest): BuiltExpression<ClaimSlot> {
  const shape = claimShape(r);
  const key = Object.entries(shape)
    .filter(([, has]) => has)
    .map(([field]) => field)
    .join(' ');
  return cached(newClaims, key, () => {
    const e = new Expression();
    const n = (attribute: string) => e.name(attribute);
    const sets = [...claimSets(e, shape, 'create'), `${n('attempt')} = ${e.value(1)}`];
    return {
      condition: `attribute_not_exists(${n('jobId')})`,
      update: `SET ${sets.join(', ')}`,
      template: e.template<ClaimSlot>(),
    };
  });
}

/**
 * `claim`'s row of TRANSITIONS: no record; or a record of the same job that is ready (queued,
 * retrying), or scheduled and either due (`runAt` within the slack of `due`) or announced.
 */
function startCondition(e: Expression, sameJob: string): string {
  const from: readonly string[] = TRANSITIONS.claim.from;
  const parked: readonly string[] = DUE_GATED_STATES;
  const ready = from.filter((s) => s !== 'absent' && !parked.includes(s));
  if (!from.includes('absent') || !parked.every((s) => from.includes(s)))
    throw new Error('the claim expression assumes absent and every parked state claimable');
  const state = e.name('state');
  return [
    `attribute_not_exists(${e.name('jobId')})`,
    `${state} IN (${ready.map((s) => e.value(s)).join(', ')}) AND ${sameJob}`,
    // A comparison, not attribute_exists(): the emulator evaluates functions far slower.
    `${state} IN (${parked.map((s) => e.value(s)).join(', ')}) AND ${sameJob} AND ${e.name('runAt')} <= ${e.slot('due')}`,
    `${state} = ${e.value('scheduled')} AND ${sameJob} AND ${e.name('announced')} = ${e.value(true)}`,
  ].join(' OR ');
}

/** `takeOver`'s row of TRANSITIONS (a running job of the same task and payload) and a lapsed lease. */
function takeOverCondition(e: Expression, sameJob: string): string {
  const [running, ...others] = TRANSITIONS.takeOver.from;
  if (others.length > 0) throw new Error('the take-over expression assumes one state');
  return `${e.name('state')} = ${e.value(running)} AND ${sameJob} AND ${e.name('leaseUntil')} < ${e.slot('now')}`;
}

/** The values of a claim's slots. */
export function claimValues(r: ClaimRequest, entry: HistoryEntry, due: number, expiresAt: number): Record<ClaimSlot, unknown> {
  return {
    task: r.task,
    payloadDigest: r.payloadDigest,
    queue: r.queue,
    version: r.version,
    publishedAt: r.publishedAt,
    now: r.now,
    due,
    worker: r.workerId,
    leaseUntil: r.leaseUntil,
    claimId: r.claimId,
    memberOf: r.memberOf,
    tags: r.tags,
    event: r.event,
    startBy: r.startBy,
    key: r.key,
    payload: r.payload,
    entry: [entry],
    expiresAt,
  };
}

/**
 * The record a landed claim wrote, from the record it found (none for a new job): what
 * {@link claimExpression} sets, in TypeScript. The conformance suite reads it back to compare.
 */
export function claimedRecord(old: JobRecord | undefined, r: ClaimRequest, entry: HistoryEntry): JobRecord {
  const {
    announced: _announced,
    leaseClaim: _leaseClaim,
    ...kept
  } = old ?? { jobId: r.jobId, updatedAt: r.now, history: [] as HistoryEntry[] };
  return {
    ...kept,
    task: r.task,
    payloadDigest: r.payloadDigest,
    queue: r.queue,
    version: r.version,
    state: 'running',
    attempt: (old?.attempt ?? 0) + 1,
    publishedAt: old?.publishedAt ?? r.publishedAt,
    firstStartedAt: old?.firstStartedAt ?? r.now,
    lastStartedAt: r.now,
    updatedAt: r.now,
    leaseOwner: r.workerId,
    leaseUntil: r.leaseUntil,
    ...(r.claimId !== undefined ? { leaseClaim: r.claimId } : {}),
    ...(r.memberOf !== undefined ? { memberOf: r.memberOf } : {}),
    ...(r.tags !== undefined && r.tags.length > 0 ? { tags: r.tags } : {}),
    ...(r.event !== undefined ? { event: r.event } : {}),
    ...(r.startBy !== undefined ? { startBy: r.startBy } : {}),
    ...(r.key !== undefined ? { key: r.key } : {}),
    ...(r.payload !== undefined ? { payload: old?.payload ?? r.payload } : {}),
    history: [...(old?.history ?? []), entry],
  };
}

export type CompletionSlot =
  | 'token'
  | 'state'
  | 'now'
  | 'history'
  | 'expiresAt'
  | 'reason'
  | 'error'
  | 'result'
  | 'resultBytes'
  | 'resultRef'
  | 'queueState'
  | 'dependents'
  | 'archiveHolder'
  | 'archiveUntil';

const completions = new Map<string, BuiltExpression<CompletionSlot>>();

/** The fields a completion sets beside its state, time, history and expiry. */
function completionShape(c: Completion, claimed: JobRecord, queueState: string | undefined) {
  return {
    finished: c.state !== 'retrying',
    retryAfter: c.state === 'retrying' && c.retryAfter === true,
    reason: c.reason !== undefined,
    error: c.error !== undefined,
    result: c.result !== undefined,
    resultBytes: c.resultBytes !== undefined,
    resultRef: c.resultRef !== undefined,
    queueState: queueState !== undefined,
    dependents: (claimed.dependents?.length ?? 0) > 0,
    archiving: c.state === 'archived' && c.archiving !== undefined,
  };
}

/**
 * A completion: the attempt whose token it presents ends, if that attempt still runs (the token
 * alone is not enough: the attempt's own end keeps it) and the job's dependents are still those
 * the completion knows (none, or as many as it read). It sets the end state, the history as the
 * completion writes it (trimmed to the limit before the write), and removes the lease.
 */
export function completionExpression(c: Completion, claimed: JobRecord, queueState: string | undefined): BuiltExpression<CompletionSlot> {
  const shape = completionShape(c, claimed, queueState);
  const key = Object.entries(shape)
    .filter(([, has]) => has)
    .map(([field]) => field)
    .join(' ');
  return cached(completions, key, () => {
    const e = new Expression();
    const n = (attribute: string) => e.name(attribute);
    const [running, ...others] = TRANSITIONS.complete.from;
    if (others.length > 0) throw new Error('the completion expression assumes one state');
    const dependents = n('dependents');
    const condition =
      `${n('attempt')} = ${e.slot('token')} AND ${n('state')} = ${e.value(running)} AND ` +
      (shape.dependents ? `size(${dependents}) = ${e.slot('dependents')}` : `attribute_not_exists(${dependents})`);
    const sets = [
      `${n('state')} = ${e.slot('state')}`,
      `${n('updatedAt')} = ${e.slot('now')}`,
      `${n('history')} = ${e.slot('history')}`,
      `${n('expiresAt')} = ${e.slot('expiresAt')}`,
      ...(shape.finished ? [`${n('finishedAt')} = ${e.slot('now')}`] : []),
      // A re-run the body asked for: counted, so the attempts used are the claims less these.
      ...(shape.retryAfter ? [`${n('retryAfters')} = if_not_exists(${n('retryAfters')}, ${e.value(0)}) + ${e.value(1)}`] : []),
      ...(['reason', 'error', 'result', 'resultBytes', 'resultRef', 'queueState'] as const)
        .filter((field) => shape[field])
        .map((field) => `${n(field === 'error' ? 'lastError' : field)} = ${e.slot(field)}`),
      // An archive's send fence, opened with the end it records (lib/policy/archive-fences.ts).
      ...(shape.archiving
        ? [`${n('archiveHolder')} = ${e.slot('archiveHolder')}`, `${n('archiveUntil')} = ${e.slot('archiveUntil')}`]
        : []),
    ];
    const removes = ['leaseOwner', 'leaseUntil', 'leaseClaim'].map(n);
    return { condition, update: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`, template: e.template<CompletionSlot>() };
  });
}

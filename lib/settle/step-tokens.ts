/**
 * A token's completion (`publisher.completeToken`, `taskworker tokens complete`, the dashboard):
 * the value kept on the waiting step and the job made due now in one conditional write, then sent
 * by the sweep's own path (lease, send, hand over) — so a completion lost before the send is sent
 * by the next sweep, and two completions of one token resume the job once.
 */
import { TokenValueError } from '../errors';
import { MAX_RESULT_BYTES } from '../policy/job-rules';
import { payloadAt } from '../policy/payload-paths';
import { eventWaitKey, type TokenCompletion, tokenCompletable, tokenJob } from '../track/job-record';
import type { JobStore } from '../track/job-stores';
import type { DecodedEvent } from '../wire/event';
import type { PayloadRef } from '../wire/payload-ref';
import { type SweepDeps, sendParked } from './parked-sends';

/** How a completion went: `completed` (sent: its job is on its queue; else the next sweep sends it), or why it was refused. */
export type TokenResult =
  | { readonly outcome: 'completed'; readonly jobId: string; readonly sent: boolean }
  | Exclude<TokenCompletion, { readonly outcome: 'completed' }>;

/** Completes `token` with `value` (JSON, at most 1 KB; none: `null`). Throws TokenValueError for text that is not a token or a value that cannot be kept. */
export async function completeStepToken(deps: SweepDeps, token: string, value: unknown): Promise<TokenResult> {
  if (!tokenJob(token)) throw new TokenValueError('token', token, 'a token as `ctx.step.waitForToken` gives it (<jobId>:<step>:<random>)');
  const json = valueJson(value);
  const now = deps.clock.now();
  const done = await deps.jobs.completeToken(token, json, now);
  if (done.outcome !== 'completed') return done;
  // Not parked (its attempt has yet to park on the wait, or a sweep sent it meanwhile): it resumes without this send.
  if (!done.parked) return { outcome: 'completed', jobId: done.jobId, sent: false };
  const sent = await sendParked(deps, [done.parked], now).catch(() => ({ sent: 0 }));
  return { outcome: 'completed', jobId: done.jobId, sent: sent.sent === 1 };
}

function valueJson(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    throw new TokenValueError('value', value, `JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (json !== undefined && Buffer.byteLength(json) > MAX_RESULT_BYTES) {
    throw new TokenValueError(
      'value',
      `${Buffer.byteLength(json)} bytes of JSON`,
      `at most ${MAX_RESULT_BYTES} bytes of JSON (keep large data elsewhere and pass its key)`,
    );
  }
  return json;
}

/** Records read per key's page while finding an event's waiters. */
const WAITERS_PAGE = 200;

/** Where an event's waiters are found and resumed: the jobs table (with its tag index) and the queues. */
export interface WaiterDeps extends SweepDeps {
  readonly jobs: SweepDeps['jobs'] & Pick<JobStore, 'jobsByTag'>;
  /** Reads a claim-checked event payload (the dispatcher's payload store); none: only inline payloads match. */
  readonly readPayload?: (ref: PayloadRef) => Promise<unknown>;
}

/**
 * Resumes the jobs on a queue that wait for `event` (`ctx.step.waitForEvent`; `waits`: the waiting
 * tasks there, each with the field its jobs match on): for each match, the jobs tagged with its key
 * (the event's value at that field) that wait for it since before the event was emitted are
 * completed like a token — one conditional write each, so a second matching event, or this one
 * delivered twice, resumes nobody again — and sent. Returns how many it resumed. Throws when the
 * jobs table does not answer: the event's message then comes back, and what was resumed stays so.
 */
export async function resumeEventWaiters(
  deps: WaiterDeps,
  event: DecodedEvent,
  waits: ReadonlyArray<{ readonly match?: string }>,
): Promise<number> {
  const payload = event.payloadRef && deps.readPayload ? await deps.readPayload(event.payloadRef) : event.payload;
  const keys = new Set(
    waits.map((w) => eventWaitKey(event.name, w.match !== undefined ? { path: w.match, value: payloadAt(payload, w.match) } : undefined)),
  );
  const received = receivedEvent(event, payload);
  let resumed = 0;
  for (const key of keys) {
    let before: number | undefined;
    for (;;) {
      const page = await deps.jobs.jobsByTag(key, WAITERS_PAGE, before);
      for (const record of page) {
        // The wait on this key it is in (parked on it, or kept and about to park); an event emitted before the wait began is not one it waits for.
        const step = record.steps?.find((s) => s.wait?.key === key && s.wait.token !== undefined && tokenCompletable(s.wait.token, record));
        const token = step?.wait?.token;
        if (!step || token === undefined || step.at > event.emittedAt) continue;
        const done = await deps.jobs.completeToken(token, received, deps.clock.now(), event);
        if (done.outcome !== 'completed') continue;
        resumed += 1;
        if (done.parked) await sendParked(deps, [done.parked], deps.clock.now()).catch(() => undefined);
      }
      if (page.length < WAITERS_PAGE) break;
      before = Math.min(...page.map((r) => r.updatedAt));
    }
  }
  return resumed;
}

/** What a wait gets back: the event's reference, with its payload when its JSON is at most 1 KB. */
function receivedEvent(event: DecodedEvent, payload: unknown): string {
  const ref = {
    id: event.id,
    name: event.name,
    ...(event.source !== undefined ? { source: event.source } : {}),
    emittedAt: event.emittedAt,
  };
  const json = JSON.stringify({ ...ref, payload: payload ?? null });
  return Buffer.byteLength(json) <= MAX_RESULT_BYTES
    ? json
    : JSON.stringify({ ...ref, payloadBytes: Buffer.byteLength(JSON.stringify(payload ?? null)) });
}

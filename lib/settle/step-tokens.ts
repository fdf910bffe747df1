/**
 * A token's completion (`publisher.completeToken`, `taskworker tokens complete`, the dashboard):
 * the value kept on the waiting step and the job made due now in one conditional write, then sent
 * by the sweep's own path (lease, send, hand over) — so a completion lost before the send is sent
 * by the next sweep, and two completions of one token resume the job once.
 */
import { TokenValueError } from '../errors';
import { MAX_RESULT_BYTES } from '../policy/job-rules';
import { type TokenCompletion, tokenJob } from '../track/job-record';
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

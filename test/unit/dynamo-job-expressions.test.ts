/**
 * The claim and the completion, every `full` tracked job's two writes, stay short: built once per
 * shape, no grouping parentheses (the emulator's parser backtracks on every one), and as few names
 * and values as the rule needs. Their meaning is the conformance suite's (test/conformance/job-store.ts).
 */
import { claimExpression, claimValues, completionExpression } from '../../lib/adapters/dynamo-job-expressions';
import type { ClaimRequest, Completion, JobRecord } from '../../lib/track/job-record';

const request: ClaimRequest = {
  jobId: 'job-1',
  task: 'noop',
  payloadDigest: 'digest',
  queue: 'work',
  version: 'v1',
  publishedAt: 1000,
  workerId: 'w1',
  now: 2000,
  leaseUntil: 12_000,
  claimId: 'claim-1',
};
const claimed: JobRecord = {
  jobId: 'job-1',
  task: 'noop',
  queue: 'work',
  version: 'v1',
  state: 'running',
  attempt: 1,
  updatedAt: 2000,
  history: [{ what: 'started', when: 2000, worker: 'w1' }],
};
const success: Completion = { jobId: 'job-1', token: 1, state: 'succeeded', workerId: 'w1', now: 2500 };

/** Parentheses that group operands, not those of a function call or an IN list. */
const grouping = (expression: string) =>
  expression.replace(/\b(attribute_not_exists|if_not_exists|list_append|size)\(|IN \(/g, '').match(/\(/g) ?? [];

describe('the claim and completion expressions', () => {
  it('are built once per shape: a second job of the same shape reuses the text and the names', () => {
    expect(claimExpression('started', { ...request, jobId: 'job-2', now: 3000 })).toBe(claimExpression('started', request));
    expect(claimExpression('started', { ...request, tags: ['a'] })).not.toBe(claimExpression('started', request));
    expect(completionExpression({ ...success, now: 9000 }, claimed, undefined)).toBe(completionExpression(success, claimed, undefined));
  });

  it('group nothing in parentheses, and name each attribute and each repeated value once', () => {
    const claim = claimExpression('started', request);
    const takeOver = claimExpression('took-over', request);
    const completion = completionExpression(success, claimed, undefined);
    for (const built of [claim, takeOver, completion]) expect(grouping(built.condition)).toEqual([]);
    const claimParams = claim.template.params(claimValues(request, { what: 'started', when: 2000, worker: 'w1' }, 2500, 99));
    // 23 names and 25 values before (issue 33): the time, the task and the digest were given once per use.
    // Three values more since (issue 36): the states a job parks at a step in, `sleeping`, `waiting-token`, `waiting-event`.
    expect(Object.keys(claimParams.ExpressionAttributeNames)).toHaveLength(23);
    // And one (issue 35): `waiting-key`, a job parked in its key's line.
    expect(Object.keys(claimParams.ExpressionAttributeValues)).toHaveLength(23);
    expect(claim.condition.length + claim.update.length).toBeLessThanOrEqual(425);
    expect(completion.condition.length + completion.update.length).toBeLessThanOrEqual(120);
  });

  it('fill every slot a shape uses, and only those', () => {
    const completion = completionExpression({ ...success, state: 'retrying', error: { type: 'Error', message: 'x' } }, claimed, undefined);
    const values = completion.template.params({
      token: 1,
      state: 'retrying',
      now: 2500,
      history: [],
      expiresAt: 99,
      reason: undefined,
      error: { type: 'Error', message: 'x' },
      result: undefined,
      resultBytes: undefined,
      resultRef: undefined,
      queueState: 'work#retrying',
      dependents: 0,
      archiveHolder: undefined,
      archiveUntil: undefined,
    }).ExpressionAttributeValues;
    const used = `${completion.condition} ${completion.update}`.match(/:[a-z]+/g) ?? [];
    expect(new Set(used)).toEqual(new Set(Object.keys(values)));
  });
});

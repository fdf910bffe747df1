/** Issue 25: ids a publisher gave stay findable when their message is archived under its own message id. */
import { MemoryJobStore } from '../../lib/fakes/memory-job-store';
import { jobShowAnswer, lookUpJob, whyFiled } from '../../lib/operate/rejections';
import type { JobRecord, Rejection } from '../../lib/track/job-record';
import { readableEnvelopeId } from '../../lib/wire/envelope';

const rejection = (messageId: string, reason: Rejection['reason'], overrides: Partial<Rejection> = {}): Rejection => ({
  jobId: messageId,
  task: 'ghost',
  payloadDigest: 'd',
  queue: 'urgent',
  version: 'v1',
  publishedAt: 1,
  reason,
  error: { type: 'EnvelopeError', message: 'task is required' },
  envelopeId: 'py-batch-u0',
  attempt: 1,
  workerId: 'w',
  now: 10,
  ...overrides,
});

describe('readableEnvelopeId: the id a malformed body still names', () => {
  it.each([
    ['{"id":"py-batch-u0","payload":1}', 'py-batch-u0'],
    ['{"task":"x","id":"has space"}', undefined],
    ['{"id":42}', undefined],
    ['["py-batch-u0"]', undefined],
    ['not json', undefined],
    ['{"__proto__":{"id":"sneaky"}}', undefined],
  ])('%s → %s', (body, id) => {
    expect(readableEnvelopeId(body)).toBe(id);
  });
});

describe('lookUpJob: the job named ID, and apart from it the messages that carried ID', () => {
  it('finds records filed under message ids with why, and none for an id nobody carried', async () => {
    const jobs = new MemoryJobStore({ historyLimit: 5, retentionDays: 7 });
    await jobs.recordRejected(rejection('m-1', 'unknown-task'));
    await jobs.recordRejected(rejection('m-2', 'malformed', { task: '', now: 20 }));
    const found = await lookUpJob(jobs, 'py-batch-u0');
    expect(found.job).toBeUndefined();
    expect(found.filed.map((f) => [f.messageId, f.why])).toEqual([
      ['m-2', 'malformed: task is required'],
      ['m-1', 'task "ghost" is not registered in version v1'],
    ]);
    expect(await lookUpJob(jobs, 'nobody')).toEqual({ filed: [] });
  });

  it('shows a real job and a stranger that carried its id side by side; the job is never the stranger', async () => {
    const jobs = new MemoryJobStore({ historyLimit: 5, retentionDays: 7 });
    const ref = { jobId: 'order-7', task: 'charge', payloadDigest: 'a', queue: 'urgent', version: 'v1', publishedAt: 1 };
    await jobs.recordQueued(ref, 1);
    await jobs.recordRejected(rejection('m-3', 'id-conflict', { envelopeId: 'order-7', task: 'charge', payloadDigest: 'b' }));
    const found = await lookUpJob(jobs, 'order-7');
    expect(found.job).toMatchObject({ jobId: 'order-7', state: 'queued', payloadDigest: 'a' });
    expect(found.filed).toHaveLength(1);
    expect(found.filed[0]?.why).toBe(
      'id order-7 belongs to another job (another task or payload): this message was not that job and never touched it',
    );
  });

  it('says why for each rejection reason', () => {
    const record = { task: 'x', version: 'v2', reason: 'unknown-task', lastError: { type: 'E', message: 'bad' } } as JobRecord;
    expect(whyFiled(record, 'id')).toBe('task "x" is not registered in version v2');
    expect(whyFiled({ ...record, reason: 'malformed' }, 'id')).toBe('malformed: bad');
  });
});

describe('jobShowAnswer: what jobs show --json prints, one shape whatever is found', () => {
  const job = (over: Partial<JobRecord>): JobRecord => ({
    jobId: 'order-7',
    task: 'charge',
    payloadDigest: 'a',
    queue: 'urgent',
    version: 'v1',
    state: 'succeeded',
    attempt: 1,
    updatedAt: 5,
    history: [],
    ...over,
  });

  it('a job: its record with the result as the value the task returned, and no rejection', () => {
    const answer = jobShowAnswer('order-7', 'v1', { job: job({ result: '{"charged":1999,"ok":true}' }), filed: [] });
    expect(answer).toEqual({
      id: 'order-7',
      version: 'v1',
      job: expect.objectContaining({ jobId: 'order-7', state: 'succeeded', result: { charged: 1999, ok: true } }),
      filedUnderMessageIds: [],
    });
    // A result kept in S3 stays a reference with its size; null and strings come back as themselves.
    const ref = { bucket: 'b', key: 'results/x', bytes: 2048, sha256: 'h' };
    expect(jobShowAnswer('order-7', 'v1', { job: job({ resultRef: ref, resultBytes: 2048 }), filed: [] }).job).toMatchObject({
      resultRef: ref,
      resultBytes: 2048,
    });
    expect(jobShowAnswer('order-7', 'v1', { job: job({ resultRef: ref }), filed: [] }).job).not.toHaveProperty('result');
    expect(jobShowAnswer('order-7', 'v1', { job: job({ result: 'null' }), filed: [] }).job?.result).toBeNull();
    expect(jobShowAnswer('order-7', 'v1', { job: job({ result: '"done"' }), filed: [] }).job?.result).toBe('done');
  });

  it('only refused messages: job null beside them; nothing: job null and none; relations only for a job in a flow', async () => {
    const jobs = new MemoryJobStore({ historyLimit: 5, retentionDays: 7 });
    await jobs.recordRejected(rejection('m-1', 'unknown-task'));
    const refused = jobShowAnswer('py-batch-u0', 'v1', await lookUpJob(jobs, 'py-batch-u0'));
    expect(refused).toMatchObject({ id: 'py-batch-u0', version: 'v1', job: null });
    expect(refused.filedUnderMessageIds.map((f) => f.messageId)).toEqual(['m-1']);
    expect(jobShowAnswer('nobody', 'v1', await lookUpJob(jobs, 'nobody'))).toEqual({
      id: 'nobody',
      version: 'v1',
      job: null,
      filedUnderMessageIds: [],
    });
    const relations = { dependents: { total: 1, read: 1, counts: { queued: 1 }, jobs: [{ jobId: 'next', state: 'queued' as const }] } };
    expect(jobShowAnswer('order-7', 'v1', { job: job({}), filed: [] }, relations).relations).toEqual(relations);
    expect(jobShowAnswer('order-7', 'v1', { job: job({}), filed: [] }, {})).not.toHaveProperty('relations');
  });
});

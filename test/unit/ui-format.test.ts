import type { JobRecord, WorkerView } from '../../dashboard/api-types';
import { errorText, exactDuration, jobRunMs, jobWaitMs, utcTime, workerCells } from '../../dashboard/page/format';

const job = (fields: Partial<JobRecord>): JobRecord => ({
  jobId: 'j',
  task: 't',
  queue: 'q',
  version: 'v',
  state: 'succeeded',
  attempt: 1,
  updatedAt: 0,
  history: [],
  ...fields,
});

describe("the dashboard page's durations and errors (dashboard/page/format.ts)", () => {
  it.each([
    [0, '0 ms'],
    [840.4, '840 ms'],
    [12_345, '12.345 s'],
    [123_456, '2 min 3.456 s'],
    [3_605_000, '1 h 0 min 5.000 s'],
    [undefined, '–'],
    [Number.NaN, '–'],
  ])('writes %s ms to the millisecond: %s', (ms, text) => {
    expect(exactDuration(ms)).toBe(text);
  });

  it("a job's wait is its publish to its first start; its run, its last attempt's start to its end (none while it runs)", () => {
    const ran = job({ publishedAt: 1_000, firstStartedAt: 3_500, lastStartedAt: 9_000, finishedAt: 9_250, updatedAt: 9_250 });
    expect([jobWaitMs(ran), jobRunMs(ran)]).toEqual([2_500, 250]);
    expect(jobRunMs(job({ state: 'retrying', lastStartedAt: 100, updatedAt: 175 }))).toBe(75);
    expect(jobRunMs(job({ state: 'running', lastStartedAt: 100, updatedAt: 175 }))).toBeUndefined();
    // Archived without ever starting (a dependency failed): no wait, no run.
    expect([jobWaitMs(job({ state: 'archived', publishedAt: 1 })), jobRunMs(job({ state: 'archived', finishedAt: 5 }))]).toEqual([
      undefined,
      undefined,
    ]);
  });

  it('prints the message once: the stack without its own head', () => {
    const error = new Error('ledger is down;\ncould not post <img src=x>');
    const text = errorText({ type: 'Error', message: error.message, stack: error.stack as string });
    expect(text.split('ledger is down')).toHaveLength(2);
    expect(text.startsWith('Error: ledger is down;\ncould not post <img src=x>\n    at ')).toBe(true);
    // A stack that does not start with the message is kept whole; no stack, the head alone.
    expect(errorText({ type: 'TimeoutError', message: 'ran 5 s', stack: 'Worker\n    at x' })).toBe(
      'TimeoutError: ran 5 s\n\nWorker\n    at x',
    );
    expect(errorText({ type: 'UnknownTaskError', message: 'task "x" is not registered' })).toBe(
      'UnknownTaskError: task "x" is not registered',
    );
  });
});

describe("the workers page's row (dashboard/page/format.ts workerCells): UTC, as every other page", () => {
  const started = Date.UTC(2026, 10, 27, 7, 12, 7, 65);
  const worker: WorkerView = {
    id: `box-1@${started}`,
    workerId: 'box-1',
    role: 'plain',
    place: { container: 'local/7' },
    status: 'live',
    startedAt: started,
    deadline: started + 300_000,
    heardAt: started + 40_000,
    weights: { urgent: 0.714, default: 0.286 },
    weightsAt: started + 38_000,
    jobs: [],
    moreJobs: 0,
  };
  const zone = process.env.TZ;
  afterEach(() => {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  });

  it.each(['America/New_York', 'Asia/Kolkata', 'UTC'])('prints its start in UTC whatever the browser’s zone (%s)', (tz) => {
    process.env.TZ = tz;
    expect(workerCells(worker, started + 45_000)).toEqual({
      since: '2026-11-27 07:12:07.065 UTC',
      deadlineIn: '255 s',
      lastHeard: '5 s ago',
      weights: 'weights at its last selection (7 s ago): urgent 71%, default 29%',
      usage: '–',
    });
    expect(utcTime(started)).toBe(utcTime(Date.parse('2026-11-27T07:12:07.065Z')));
  });

  it('gives its memory against rssLimitMb and its CPU since the previous beat, as its beat carried them', () => {
    expect(workerCells({ ...worker, usage: { rssMb: 412, limitMb: 1536, cpuPercent: 37 } }, started + 45_000).usage).toBe(
      '412 of 1536 MB · CPU 37%',
    );
  });

  it('says when its deadline passed, and that a doorbell selects no queue', () => {
    const { weights: _weights, weightsAt: _at, ...unweighed } = worker;
    expect(workerCells({ ...unweighed, role: 'doorbell' }, started + 400_000)).toMatchObject({
      deadlineIn: 'passed',
      weights: "weights: none, it selects no queue (a doorbell runs the batch its queue's trigger gave it)",
    });
  });
});

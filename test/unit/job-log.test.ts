import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as CloudWatchLogs from '@aws-sdk/client-cloudwatch-logs';
import { insightsJobLogs, jobLogQuery } from '../../lib/adapters/cloudwatch-logs';
import { fileJobLogs, jobLogEntryOf } from '../../lib/adapters/file-job-logs';
import { MAX_TASK_LOG_MESSAGE_CHARS, taskLogLine } from '../../lib/run/job-log';
import { defineTask } from '../../lib/tasks/task';
import { runTask } from '../../lib/testing';

const talker = defineTask({
  name: 'talker',
  queue: 'default',
  timeLimitSeconds: 5,
  async run(payload: { say: string; wait: number }, ctx) {
    ctx.log.info('starting', { say: payload.say });
    await new Promise((resolve) => setTimeout(resolve, payload.wait));
    console.log('printed %s after %d ms', payload.say, payload.wait);
    console.error(new Error(`oops ${payload.say}`).message);
    // A field named like a bound one does not pass itself off as another job's line.
    ctx.log.warn('hostile', { jobId: 'someone-else', attempt: 99, level: 'error' });
    return payload.say;
  },
});

describe("a job's log lines", () => {
  it('carry the job id and attempt on every ctx.log and console line, each run its own even when runs interleave', async () => {
    const [slow, fast] = await Promise.all([
      runTask(talker, { say: 'slow', wait: 60 }, { jobId: 'job-slow', attempt: 2 }),
      runTask(talker, { say: 'fast', wait: 5 }, { jobId: 'job-fast', attempt: 1 }),
    ]);
    for (const [run, id, attempt, say] of [
      [slow, 'job-slow', 2, 'slow'],
      [fast, 'job-fast', 1, 'fast'],
    ] as const) {
      expect(run.status).toBe('succeeded');
      expect(run.logs.map((l) => [l.level, l.message, l.jobId, l.attempt, l.source, l.task, l.queue])).toEqual([
        ['info', 'starting', id, attempt, 'task', 'talker', 'default'],
        ['info', `printed ${say} after ${say === 'slow' ? 60 : 5} ms`, id, attempt, 'task', 'talker', 'default'],
        ['error', `oops ${say}`, id, attempt, 'task', 'talker', 'default'],
        ['warn', 'hostile', id, attempt, 'task', 'talker', 'default'],
      ]);
      expect(run.logs[0]?.say).toBe(say);
    }
  });

  it('leave console alone outside a run', () => {
    const seen: unknown[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      seen.push(chunk);
      return true;
    });
    try {
      // jest's console is its own; the capture only wraps what a run calls inside its scope.
      console.info('outside any job');
    } finally {
      spy.mockRestore();
    }
    expect(seen.join('')).not.toContain('"source":"task"');
  });

  it('cut a long message and write a field JSON cannot (a cycle, a BigInt) without throwing', () => {
    const cyclic: Record<string, unknown> = { n: 1n };
    cyclic.self = cyclic;
    const line = JSON.parse(
      taskLogLine('info', { jobId: 'j', attempt: 1, task: 't', queue: 'q' }, 'x'.repeat(MAX_TASK_LOG_MESSAGE_CHARS + 5), { cyclic }),
    );
    expect(line.message).toHaveLength(MAX_TASK_LOG_MESSAGE_CHARS + '… (5 more characters)'.length);
    expect(line.cyclic).toEqual({ n: 1, self: expect.stringMatching(/^\[Circular/) });
  });

  it("are read back from dev's log file by job id, in its window, other jobs' and other lines left out", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tw-job-logs-'));
    const file = join(dir, 'dev.log');
    const at = (ms: number) => new Date(ms).toISOString();
    const lines = [
      JSON.stringify({ level: 'info', time: at(1_000), message: 'early', source: 'task', jobId: 'j-1', attempt: 1, task: 't', queue: 'q' }),
      'plain text a task printed before it was captured: j-1',
      JSON.stringify({
        level: 'INFO',
        time: at(5_000),
        message: 'archiving message',
        service: 'taskworker-dispatcher',
        jobId: 'j-1',
        reason: 'exhausted',
      }),
      JSON.stringify({
        level: 'info',
        time: at(6_000),
        message: 'other job',
        source: 'task',
        jobId: 'j-10',
        attempt: 1,
        task: 't',
        queue: 'q',
      }),
      '{"broken json j-1',
      JSON.stringify({
        level: 'warn',
        time: at(9_000),
        message: 'late',
        source: 'task',
        jobId: 'j-1',
        attempt: 2,
        task: 't',
        queue: 'q',
        n: 3,
      }),
    ];
    writeFileSync(file, `${lines.join('\n')}\n`);
    const reader = fileJobLogs(file, '.taskworker/dev.log');
    expect(reader.where).toBe('.taskworker/dev.log');
    expect(await reader.linesOf('j-1', { from: 0, to: 10_000 })).toEqual([
      { time: at(1_000), level: 'info', message: 'early', source: 'task', attempt: 1, fields: {} },
      { time: at(5_000), level: 'info', message: 'archiving message', source: 'dispatcher', fields: { reason: 'exhausted' } },
      { time: at(9_000), level: 'warn', message: 'late', source: 'task', attempt: 2, fields: { n: 3 } },
    ]);
    expect((await reader.linesOf('j-1', { from: 2_000, to: 8_000 })).map((l) => l.message)).toEqual(['archiving message']);
    expect(await fileJobLogs(join(dir, 'missing.log')).linesOf('j-1', { from: 0, to: 10_000 })).toEqual([]);
    expect(jobLogEntryOf('{"jobId":"j-1x","level":"info"}', 'j-1')).toBeUndefined();
  });

  it("are asked of Logs Insights by the jobId field, the id quoted, or by the quoted id in a batch call's jobIds", () => {
    const query = jobLogQuery('order-"7"/a.b');
    expect(query).toMatch(
      /^fields @timestamp, @message \| filter jobId = "order-\\"7\\"\/a\.b" or @message like \/.+\/ \| sort @timestamp asc \| limit 1000$/,
    );
    // The regex finds the id in a batch call's line (as JSON writes it) and not a longer id.
    const regex = new RegExp((/ like \/(.+)\/ \|/.exec(query) as RegExpExecArray)[1] as string);
    const line = (ids: string[]) => taskLogLine('info', { jobId: 'x', attempt: 1, task: 't', queue: 'q', jobIds: ids }, 'm');
    expect(regex.test(line(['a', 'order-"7"/a.b']))).toBe(true);
    expect(regex.test(line(['order-"7"/a.bc', 'order-"7"/aXb']))).toBe(false);
  });

  it("finds a batch call's lines for each of its jobs, without the first item's attempt on the others", () => {
    const line = taskLogLine('info', { jobId: 'j-1', attempt: 3, task: 't', queue: 'q', jobIds: ['j-1', 'j-2'] }, 'loaded', { rows: 2 });
    expect(jobLogEntryOf(line, 'j-1')).toMatchObject({ message: 'loaded', attempt: 3, fields: { rows: 2 } });
    const other = jobLogEntryOf(line, 'j-2');
    expect(other).toMatchObject({ message: 'loaded', fields: { rows: 2 } });
    expect(other).not.toHaveProperty('attempt');
    expect(jobLogEntryOf(line, 'j-3')).toBeUndefined();
  });
});

describe('the Logs Insights reader (error paths: no CloudWatch here)', () => {
  /** A stand-in client answering each command from a script (only the SDK's command classes are real). */
  function scripted(statuses: string[], rows: { field: string; value: string }[][] = []) {
    const sent: string[] = [];
    const client = {
      send: async (command: { constructor: { name: string } }) => {
        sent.push(command.constructor.name);
        if (command.constructor.name === 'StartQueryCommand') return { queryId: 'q-1' };
        if (command.constructor.name === 'GetQueryResultsCommand') return { status: statuses.shift() ?? 'Running', results: rows };
        return {};
      },
    };
    return { sent, client: client as unknown as CloudWatchLogs.CloudWatchLogsClient };
  }

  it('polls until the query completes and keeps only the job’s JSON lines', async () => {
    const line = JSON.stringify({
      level: 'info',
      time: '2026-01-01T00:00:00.000Z',
      message: 'hi',
      source: 'task',
      jobId: 'j-1',
      attempt: 1,
    });
    const { sent, client } = scripted(
      ['Scheduled', 'Running', 'Complete'],
      [[{ field: '@message', value: `${line}\n` }], [{ field: '@message', value: 'START RequestId: x' }]],
    );
    const reader = insightsJobLogs(
      { sdk: CloudWatchLogs, client },
      async () => '/aws/lambda/shop-v1-dispatcher',
      async () => {},
    );
    expect((await reader.linesOf('j-1', { from: 0, to: 1 })).map((l) => l.message)).toEqual(['hi']);
    expect(sent).toEqual(['StartQueryCommand', 'GetQueryResultsCommand', 'GetQueryResultsCommand', 'GetQueryResultsCommand']);
  });

  it('names the log group and the status of a query that failed', async () => {
    const { client } = scripted(['Failed']);
    const reader = insightsJobLogs(
      { sdk: CloudWatchLogs, client },
      async () => '/aws/lambda/shop-v1-dispatcher',
      async () => {},
    );
    await expect(reader.linesOf('j-1', { from: 0, to: 1 })).rejects.toThrow(
      'the Logs Insights query over /aws/lambda/shop-v1-dispatcher ended Failed',
    );
  });
});

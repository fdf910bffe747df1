import { consoleLine, exitLine, failureLines, stateLine, userFrame } from '../../cli/dev-console';
import { taskLogLine } from '../../lib/run/job-log';

describe('what taskworker dev prints', () => {
  it('a failed attempt: task, job, attempt, error and the first frame in the user code', () => {
    const stack = [
      'DownstreamError: said 503',
      '    at Object.run (/home/ana/shop/tasks/charge.ts:14:11)',
      '    at runTaskBody (/tmp/taskworker-dev-abc/tasks.cjs:100:3)',
    ].join('\n');
    const [line] = failureLines(
      {
        queue: 'default',
        settleRetries: 0,
        jobs: [
          {
            messageId: 'm1',
            jobId: 'j1',
            task: 'charge',
            outcome: 'retried',
            attempt: 2,
            error: { type: 'DownstreamError', message: 'said 503', stack },
          },
          { messageId: 'm2', jobId: 'j2', task: 'charge', outcome: 'succeeded', attempt: 1 },
        ],
      },
      3,
      '/home/ana/shop',
    );
    expect(line).toBe('[dispatcher 3] ✗ charge j1 attempt 2: DownstreamError: said 503 at tasks/charge.ts:14:11 → retrying');
  });

  it('a rejected message has no task: it is named by its message id, with the archive reason', () => {
    const lines = failureLines(
      {
        queue: 'default',
        settleRetries: 0,
        jobs: [
          {
            messageId: 'm9',
            jobId: 'm9',
            outcome: 'archived',
            reason: 'malformed',
            attempt: 1,
            error: { type: 'EnvelopeError', message: 'not JSON' },
          },
        ],
      },
      0,
    );
    expect(lines).toEqual(['[dispatcher 0] ✗ message m9: EnvelopeError: not JSON → archived (malformed)']);
  });

  it('skips frames in node_modules, Node itself and the temporary build', () => {
    const stack = [
      'Error: x',
      '    at a (node:internal/x:1:1)',
      '    at b (/p/node_modules/lib/i.js:2:2)',
      '    at c (/tmp/taskworker-dev-q1/tasks.cjs:3:3)',
    ].join('\n');
    expect(userFrame(stack, '/p')).toBeUndefined();
    expect(userFrame(`${stack}\n    at /p/tasks/t.ts:4:5`, '/p')).toBe('tasks/t.ts:4:5');
  });

  it('a dispatcher that died: how, what it held, and its replacement', () => {
    expect(
      exitLine({
        dispatcher: 1,
        code: null,
        signal: 'SIGKILL',
        held: [{ queue: 'default', messageId: 'm1', jobId: 'j1', task: 'crash' }],
        replacement: { dispatcher: 2, afterMs: 500 },
      }),
    ).toBe(
      '[dispatcher 1] was killed by SIGKILL; it held 1 job(s): crash j1 (they return when their visibility lapses); starting dispatcher 2 in 0.5 s',
    );
    expect(exitLine({ dispatcher: 0, code: 3, signal: null, held: [] })).toBe('[dispatcher 0] exited with code 3; it held no job');
  });

  it('JSON log lines become readable ones at or above the level; other output passes through', () => {
    const json = JSON.stringify({ level: 'WARN', message: 'archiving message', function_name: 'x', queue: 'default', reason: 'malformed' });
    expect(consoleLine(json, 0, 'WARN')).toBe('[dispatcher 0] WARN archiving message  queue=default reason=malformed');
    expect(consoleLine(json, 0, 'ERROR')).toBeUndefined();
    expect(consoleLine('hello from a task', 1, 'ERROR')).toBe('[dispatcher 1] hello from a task');
  });

  it("a task's own JSON line is shown whatever the level, its job and attempt first", () => {
    const line = taskLogLine('info', { jobId: 'j-7', attempt: 2, task: 'charge', queue: 'default' }, 'charged', { cents: 1200 });
    expect(consoleLine(line, 0, 'ERROR')).toBe('[dispatcher 0] [job j-7 #2] INFO charged  cents=1200');
  });
});

describe('the line on what a start kept from the last run', () => {
  const dir = '/p/.taskworker/emulators';
  it.each([
    [
      { kind: 'new' } as const,
      undefined,
      'state: kept in .taskworker/emulators between runs (Ctrl-C stops cleanly and keeps it; --reset starts empty)',
    ],
    [{ kind: 'reset' } as const, undefined, 'state: started empty (--reset); kept in .taskworker/emulators between runs from now on'],
    [
      { kind: 'kept' } as const,
      { queues: 2, messages: 5, objects: 1 },
      'state: kept from the last run in .taskworker/emulators: the jobs tables, 5 message(s) in 2 queue(s), 1 stored object(s) (--reset starts empty)',
    ],
  ])('%j', (found, restored, line) => {
    expect(stateLine({ dir, found, ...(restored ? { restored } : {}) }, '/p')).toEqual({ line });
  });

  it('a dev that was killed is a warning: it started empty, and why', () => {
    expect(stateLine({ dir, found: { kind: 'unclean', pid: 4242 } }, '/p')).toEqual({
      line: "the last taskworker dev here (pid 4242) did not stop cleanly (killed?): its queues' messages died with it, so this one starts empty rather than with jobs that would never run (Ctrl-C stops cleanly and keeps them)",
      warning: true,
    });
  });
});

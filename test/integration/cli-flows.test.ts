/**
 * The operator's side of jobs that wait for other jobs, on the emulators under `taskworker dev`'s
 * own dispatchers: publish with --depends-on and --tag, what `jobs show` and `jobs flow` say about
 * a flow, `jobs list --tag`, and cancelling a waiting job or a whole flow. Every assertion about
 * what happened reads the jobs table.
 */
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { FlowCancelResult, FlowView, JobShowAnswer } from '../../lib/operate/answers';
import type { TaggedPage } from '../../lib/operate/flow-commands';
import { payloadDigest } from '../../lib/policy/job-rules';
import { cli } from '../helpers/cli';
import { FIXTURE_CONFIG, tempFile } from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';

describe('flows from the CLI, against taskworker dev', () => {
  let stack: LocalStack;
  const saved = { ...process.env };
  const journal = tempFile('journal.jsonl');
  const run = (...argv: string[]) => cli(...argv, '--version', stack.version, '--config', FIXTURE_CONFIG);
  const publish = async (id: string, ...options: string[]) => {
    const result = await run('publish', 'record', '--payload', JSON.stringify({ journal, n: id }), '--id', id, '--json', ...options);
    expect({ code: result.code, err: result.err }).toEqual({ code: 0, err: '' });
    return JSON.parse(result.out) as { jobId: string };
  };
  const state = async (id: string) => (await stack.jobs.get(id))?.state;
  const dependentsOf = async (id: string) => ((await stack.jobs.get(id))?.dependents ?? []).map((e) => e.id).sort();
  /** A job a dispatcher holds right now (running, its lease live for an hour), with no message anywhere. */
  const running = async (jobId: string) => {
    const now = Date.now();
    const claim = await stack.jobs.claim({
      jobId,
      task: 'record',
      payloadDigest: payloadDigest(null),
      queue: 'urgent',
      version: stack.version,
      publishedAt: now,
      workerId: 'elsewhere',
      now,
      leaseUntil: now + 3_600_000,
    });
    expect(claim.outcome).toBe('claimed');
  };
  /** A refusal: the exit code, and one line on stderr (no stack trace). */
  const refusal = (result: { code: number; err: string }) => ({ code: result.code, lines: result.err.trim().split('\n') });

  beforeAll(async () => {
    stack = await startLocalStack({ configFile: FIXTURE_CONFIG });
    Object.assign(process.env, stack.env);
  });
  afterAll(async () => {
    process.env = saved;
    await stack.stop();
  });

  it('publish --depends-on --tag: the dependent runs after its dependency; jobs show lists each side with its state', async () => {
    await publish('first', '--tag', 'nightly');
    await publish('second', '--depends-on', 'first', '--tag', 'nightly', '--tag', 'second-step');
    await eventually('both to succeed', async () => (await state('second')) === 'succeeded', 30_000);
    const [first, second] = [await stack.jobs.get('first'), await stack.jobs.get('second')];
    expect(second?.firstStartedAt).toBeGreaterThanOrEqual(first?.finishedAt as number);
    expect(readJournal(journal).map((e) => e.n)).toEqual(['first', 'second']);

    const shown = JSON.parse((await run('jobs', 'show', 'second', '--json')).out) as JobShowAnswer;
    expect(shown.job).toMatchObject({ state: 'succeeded', dependsOn: ['first'], tags: ['nightly', 'second-step'] });
    expect(shown.relations?.dependencies).toMatchObject({
      total: 1,
      complete: true,
      jobs: [{ jobId: 'first', state: 'succeeded', task: 'record' }],
    });
    const text = (await run('jobs', 'show', 'second')).out;
    expect(text).toMatch(/tags\s+nightly, second-step\n/);
    expect(text).toMatch(/waits for 1 job\(s\) — on a failure: fail; all ended\n\s+first {2}succeeded {2}record\n/);
  });

  it('jobs list --tag: every state, newest first, paged with --cursor; a job in no flow shows no relations', async () => {
    await publish('later', '--delay', '3600');
    await eventually('later to be parked', async () => (await state('later')) === 'scheduled');
    await publish('third', '--tag', 'nightly', '--depends-on', 'later');
    const all = JSON.parse((await run('jobs', 'list', '--tag', 'nightly', '--json')).out) as TaggedPage;
    expect(all.jobs.map((j) => [j.jobId, j.state])).toEqual([
      ['third', 'waiting'],
      ['second', 'succeeded'],
      ['first', 'succeeded'],
    ]);
    expect(all.next).toBeUndefined();
    const seen: string[] = [];
    let cursor: string[] = [];
    for (let page = 0; page < 5; page++) {
      const body = JSON.parse((await run('jobs', 'list', '--tag', 'nightly', '--limit', '1', '--json', ...cursor)).out) as TaggedPage;
      seen.push(...body.jobs.map((j) => j.jobId));
      if (!body.next) break;
      cursor = ['--cursor', body.next];
    }
    expect(seen).toEqual(['third', 'second', 'first']);
    const text = await run('jobs', 'list', '--tag', 'nightly', '--limit', '2');
    expect(text.out).toMatch(/third\s+record\s+urgent\s+waiting/);
    expect(text.out).toMatch(/older: taskworker jobs list --tag nightly --cursor \S+/);
    expect((await run('jobs', 'list', '--tag', 'never-used')).out.trim()).toBe('no jobs tagged never-used');
    expect(JSON.parse((await run('jobs', 'show', 'later', '--json')).out)).toMatchObject({ job: { state: 'scheduled' } });
    expect(JSON.parse((await run('jobs', 'show', 'second', '--json')).out)).toHaveProperty('relations');
    await publish('alone');
    expect(JSON.parse((await run('jobs', 'show', 'alone', '--json')).out)).not.toHaveProperty('relations');
  });

  it("jobs cancel of a waiting job: its 'fail' dependents are archived, its 'ignore' ones run; a running job is asked to stop in one line", async () => {
    await publish('root', '--delay', '3600');
    await eventually('root to be parked', async () => (await state('root')) === 'scheduled');
    await publish('w', '--depends-on', 'root');
    await publish('f', '--depends-on', 'w');
    await publish('g', '--depends-on', 'w', '--on-dependency-failure', 'ignore');
    await eventually(
      'the dependents to register',
      async () => (await dependentsOf('w')).join() === 'f,g' && (await dependentsOf('root')).join() === 'w',
    );
    expect(await state('w')).toBe('waiting');
    const shown = (await run('jobs', 'show', 'w')).out;
    expect(shown).toMatch(/waits for 1 job\(s\) — on a failure: fail\n\s+root {2}scheduled {2}record\n/);
    expect(shown).toMatch(/dependents 2 job\(s\)\n\s+f {2}waiting {2}record\n\s+g {2}waiting {2}record\n/);

    const cancelled = await run('jobs', 'cancel', 'w');
    expect(cancelled.code).toBe(0);
    expect(cancelled.out.trim()).toBe(
      'cancelled job w (it was waiting for other jobs); it will not run; its 2 dependent(s) count it as failed',
    );
    expect(await stack.jobs.get('w')).toMatchObject({ state: 'cancelled' });
    expect(await stack.jobs.get('f')).toMatchObject({ state: 'archived', reason: 'dependency-failed' });
    await eventually('g, which ignores a failed dependency, to run', async () => (await state('g')) === 'succeeded', 30_000);
    expect(readJournal(journal).map((e) => e.n)).toContain('g');
    expect(readJournal(journal).map((e) => e.n)).not.toContain('f');
    expect(await state('root')).toBe('scheduled');
    // Cancelled already: said so, and the count into its dependents is made again (idempotent).
    const again = await run('jobs', 'cancel', 'w');
    expect(again.code).toBe(1);
    expect(again.out.trim()).toBe('job w was already cancelled');

    // A running job is asked to stop, in one line; its dispatcher ends it (none holds this one).
    await running('busy');
    const asked = await run('jobs', 'cancel', 'busy');
    expect({ code: asked.code, lines: asked.out.trim().split('\n') }).toEqual({
      code: 0,
      lines: ['job busy is running: asked it to stop; it ends cancelled within a few seconds (its dependents count it as failed)'],
    });
    expect(await stack.jobs.get('busy')).toMatchObject({ state: 'running', cancelRequestedAt: expect.any(Number) });
  });

  it('jobs cancel --flow: the job and every job waiting for it, transitively; what could not be cancelled is listed', async () => {
    await publish('w2', '--depends-on', 'root');
    await publish('f2', '--depends-on', 'w2');
    await publish('y', '--depends-on', 'busy');
    await eventually(
      'the dependents to register',
      async () => (await dependentsOf('w2')).join() === 'f2' && (await dependentsOf('busy')).join() === 'y',
    );
    const flow = JSON.parse((await run('jobs', 'flow', 'f2', '--json')).out) as FlowView;
    expect(flow.counts).toEqual({ scheduled: 1, waiting: 2, cancelled: 1, archived: 1, succeeded: 1 });
    expect(flow.jobs.map((j) => j.jobId).sort()).toEqual(['f', 'f2', 'g', 'root', 'w', 'w2']);
    const text = (await run('jobs', 'flow', 'f2')).out;
    expect(text).toMatch(/^flow of job f2: 6 job\(s\)\n/);
    expect(text).toMatch(/\b2 waiting\b/);
    expect(text).toMatch(/\s1\s+w2\s+record\s+waiting/);

    const result = await run('jobs', 'cancel', 'root', '--flow', '--json');
    expect(result.code).toBe(0);
    const answer = JSON.parse(result.out) as FlowCancelResult;
    expect([...answer.cancelled].sort()).toEqual(['f2', 'root', 'w2']);
    expect([...answer.notCancelled].sort((a, b) => a.jobId.localeCompare(b.jobId))).toEqual([
      { jobId: 'f', state: 'archived' },
      { jobId: 'g', state: 'succeeded' },
      { jobId: 'w', state: 'cancelled' },
    ]);
    for (const id of ['root', 'w2', 'f2']) expect(await state(id)).toBe('cancelled');
    expect(readJournal(journal).map((e) => e.n)).not.toContain('f2');

    const held = await run('jobs', 'cancel', 'busy', '--flow');
    expect(held.code).toBe(0);
    expect(held.out.trim()).toBe('cancelled 1 job(s): y\nnot cancelled: busy is running');
    expect(await state('y')).toBe('cancelled');
    expect(await state('busy')).toBe('running');
    const none = await run('jobs', 'cancel', 'no-such-job', '--flow');
    expect(none.code).toBe(1);
    expect(none.out.trim()).toBe('no job no-such-job: nothing to cancel');
  });

  it.each([
    [
      ['publish', 'record', '--payload', '{}', '--tag', 'has space'],
      2,
      '--tag "has space": expected 1..64 printable ASCII characters, no spaces',
    ],
    [['publish', 'record', '--payload', '{}', '--tag', 'x'.repeat(65)], 2, '… (65 characters): expected 1..64 printable ASCII characters'],
    [
      ['publish', 'record', '--payload', '{}', ...Array.from({ length: 11 }, (_, i) => ['--tag', `t${i}`]).flat()],
      2,
      '--tag given 11 times ("t0", "t1"',
    ],
    [['publish', 'record', '--payload', '{}', '--depends-on', 'a,,b'], 2, '--depends-on "": expected job ids'],
    [['publish', 'record', '--payload', '{}', '--depends-on', 'a,a'], 2, '--depends-on names "a" twice'],
    [
      ['publish', 'record', '--payload', '{}', '--depends-on', 'a', '--on-dependency-failure', 'maybe'],
      2,
      '--on-dependency-failure "maybe": expected fail or ignore',
    ],
    [['publish', 'record', '--payload', '{}', '--on-dependency-failure', 'ignore'], 2, '--on-dependency-failure: only with --depends-on'],
    [
      ['publish', 'record', '--payload', '{}', '--depends-on', 'no-such-job'],
      2,
      'DependencyError: Dependency "no-such-job" refused: no such job in this version',
    ],
    [['jobs', 'list', '--tag', 'has space'], 2, '--tag "has space": expected 1..64'],
    [['jobs', 'list', '--tag', 'nightly', '--state', 'archived'], 2, '--state cannot narrow it'],
    [['jobs', 'list', '--state', 'archived', '--cursor', 'x'], 2, '--cursor pages a list by --tag'],
    [['jobs', 'list', '--tag', 'nightly', '--cursor', 'AAAA'], 2, 'BadCursorError'],
    [['jobs', 'flow', 'no-such-job'], 1, 'no job no-such-job in version'],
  ])('%j → exit %d, one line naming the value', async (argv, code, named) => {
    const result = refusal(await run(...argv));
    expect(result.code).toBe(code);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toContain(named);
  });
});

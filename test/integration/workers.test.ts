/**
 * Who is working, on what (issue 23), on the emulators under `taskworker dev`'s own dispatcher
 * processes, from the CLI: two dispatchers each holding a 10 s job are listed with it; one
 * SIGKILLed is shown vanished with the job it held, which another dispatcher then ends `succeeded`.
 */
import { join } from 'node:path';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { JobShowAnswer } from '../../lib/operate/answers';
import type { WorkersView } from '../../lib/operate/worker-views';
import { cli } from '../helpers/cli';
import { eventually } from '../helpers/run';

const CONFIG = join(__dirname, '..', 'fixtures', 'workers', 'taskworker.config.ts');

describe('taskworker workers against taskworker dev', () => {
  let stack: LocalStack;
  const saved = { ...process.env };
  const run = (...argv: string[]) => cli(...argv, '--version', stack.version, '--config', CONFIG);
  let view: WorkersView;
  /** Reads `workers --json` (at most twice a second) into `view`, then checks it. */
  const workersSay = (check: (v: WorkersView) => boolean) => async () => {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const { code, out } = await run('workers', '--json');
    if (code !== 0) throw new Error(`workers --json exited ${code}`);
    view = JSON.parse(out) as WorkersView;
    return check(view);
  };

  beforeAll(async () => {
    stack = await startLocalStack({
      configFile: CONFIG,
      version: 'workers',
      dispatchers: 2,
      replaceDeadDispatchers: false,
      invocationSeconds: 300,
    });
    Object.assign(process.env, stack.env);
  });
  afterAll(async () => {
    process.env = saved;
    await stack.stop();
  });

  it('lists both dispatchers with the 10 s job each holds; a SIGKILLed one is shown vanished with its job, which another ends succeeded', async () => {
    // Four 10 s jobs for two one-slot dispatchers: whichever takes what (a busy one may take one
    // more ahead, to start when its slot frees), each runs one at some moment while the other does.
    for (const id of ['ten-a', 'ten-b', 'ten-c', 'ten-d']) await stack.publisher.publish('ten', {}, { id });
    const running = (w: WorkersView['workers'][number]) => w.jobs.find((j) => j.state === 'running' && j.heldByWorker);
    await eventually(
      'two live workers, each running one of the jobs',
      workersSay((v) => v.workers.filter((w) => w.status === 'live' && running(w)).length === 2),
      60_000,
    ).catch((error) => {
      throw new Error(`${error}: ${JSON.stringify(view)} ${stack.dispatchers.map((c) => c.pid)}`);
    });
    const pids = stack.dispatchers.map((c) => c.pid);
    const live = view.workers.filter((w) => w.status === 'live' && running(w));
    for (const w of live) {
      expect(w).toMatchObject({ status: 'live', role: 'plain', place: { function: 'twworkers-workers-dispatcher' } });
      expect(pids.map((pid) => `local/${pid}`)).toContain(w.place.container);
      expect(w.deadline).toBeGreaterThan(w.heardAt);
      expect(w.weights).toEqual({ work: 1 });
      expect(running(w)).toMatchObject({ state: 'running', leaseOwner: w.workerId, heldByWorker: true, task: 'ten' });
    }
    expect(new Set(live.map((w) => w.workerId)).size).toBe(2);
    expect((await run('workers')).out).toMatch(/^2 working, 0 vanished/);

    // Kill a dispatcher while it runs a job, with no chance to say goodbye.
    const victim = live[0] as WorkersView['workers'][number];
    const held = running(victim)?.jobId as string;
    const child = stack.dispatchers.find((c) => `local/${c.pid}` === victim.place.container);
    expect(child).toBeDefined();
    child?.kill('SIGKILL');

    await eventually(
      'the killed dispatcher shown vanished, its job succeeded by the other',
      workersSay((v) => {
        const gone = v.workers.find((w) => w.id === victim.id);
        return gone?.status === 'vanished' && gone.jobs.find((j) => j.jobId === held)?.state === 'succeeded';
      }),
      120_000,
    );
    const gone = view.workers.find((w) => w.id === victim.id);
    const survivor = view.workers.find((w) => w.workerId !== victim.workerId);
    expect(gone?.jobs).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ jobId: held, state: 'succeeded', heldByWorker: false, fate: `succeeded by ${survivor?.workerId}` }),
      ]),
    );
    expect(view.vanished).toBe(1);
    const { job } = JSON.parse((await run('jobs', 'show', held, '--json')).out) as JobShowAnswer;
    if (!job) throw new Error(`no job ${held}`);
    expect(job.history.map((h) => [h.what, h.worker])).toEqual(
      expect.arrayContaining([
        ['started', victim.workerId],
        ['took-over', survivor?.workerId],
        ['succeeded', survivor?.workerId],
      ]),
    );
    expect((await run('workers')).out).toContain(`VANISHED ${victim.workerId}`);
  }, 240_000);
});

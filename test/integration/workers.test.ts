/**
 * Who is working, on what (issue 23), on the emulators under `taskworker dev`'s own dispatcher
 * processes, from the CLI: two dispatchers each holding a 10 s job are listed with it; one
 * SIGKILLed is shown vanished with the job it held, which another dispatcher then ends `succeeded`.
 */
import { join } from 'node:path';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { WorkersView } from '../../lib/operate/workers';
import type { JobRecord } from '../../lib/track/model';
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
    // One job, then the other once the first is held: the busy dispatcher has no free slot, the other takes it.
    await stack.publisher.publish('ten', {}, { id: 'ten-a' });
    await eventually(
      'a worker holding ten-a',
      workersSay((v) => v.workers.some((w) => w.jobs[0]?.jobId === 'ten-a')),
      30_000,
    );
    await stack.publisher.publish('ten', {}, { id: 'ten-b' });
    await eventually(
      'two live workers, each holding one of the jobs',
      workersSay((v) => v.workers.filter((w) => w.status === 'live' && w.jobs.length === 1).length === 2),
      30_000,
    ).catch(async (error) => {
      const a = (await run('jobs', 'show', 'ten-a', '--json')).out;
      const b = (await run('jobs', 'show', 'ten-b', '--json')).out;
      throw new Error(`${error}: ${JSON.stringify(view)} ${a} ${b} ${stack.dispatchers.map((c) => c.pid)}`);
    });
    const pids = stack.dispatchers.map((c) => c.pid);
    for (const w of view.workers) {
      expect(w).toMatchObject({ status: 'live', role: 'plain', place: { function: 'twworkers-workers-dispatcher' } });
      expect(pids.map((pid) => `local/${pid}`)).toContain(w.place.container);
      expect(w.deadline).toBeGreaterThan(w.heardAt);
      expect(w.weights).toEqual({ work: 1 });
      expect(w.jobs[0]).toMatchObject({ state: 'running', leaseOwner: w.workerId, heldByWorker: true, task: 'ten' });
    }
    expect(view.workers.flatMap((w) => w.jobs.map((j) => j.jobId)).sort()).toEqual(['ten-a', 'ten-b']);
    const text = await run('workers');
    expect(text.out).toMatch(/^2 working, 0 vanished/);

    // Kill the dispatcher holding ten-a, with no chance to say goodbye.
    const victim = view.workers.find((w) => w.jobs[0]?.jobId === 'ten-a');
    const child = stack.dispatchers.find((c) => `local/${c.pid}` === victim?.place.container);
    expect(child).toBeDefined();
    child?.kill('SIGKILL');

    await eventually(
      'the killed dispatcher shown vanished, its job succeeded by the other',
      workersSay((v) => {
        const gone = v.workers.find((w) => w.id === victim?.id);
        return gone?.status === 'vanished' && gone.jobs[0]?.state === 'succeeded';
      }),
      90_000,
    );
    const survivor = view.workers.find((w) => w.status === 'live');
    const gone = view.workers.find((w) => w.id === victim?.id);
    expect(gone?.jobs).toEqual([
      expect.objectContaining({ jobId: 'ten-a', state: 'succeeded', heldByWorker: false, fate: `succeeded by ${survivor?.workerId}` }),
    ]);
    expect(view).toMatchObject({ live: 1, vanished: 1 });
    const job = JSON.parse((await run('jobs', 'show', 'ten-a', '--json')).out) as JobRecord;
    expect(job.history.map((h) => [h.what, h.worker])).toEqual(
      expect.arrayContaining([
        ['started', victim?.workerId],
        ['took-over', survivor?.workerId],
        ['succeeded', survivor?.workerId],
      ]),
    );
    expect((await run('workers')).out).toContain(`VANISHED ${victim?.workerId}`);
  }, 180_000);
});

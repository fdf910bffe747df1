/**
 * Hooks as they run in Lambda and `taskworker dev`: defined in a task module and in a TypeScript
 * config, built into the tasks bundle with esbuild, run by a real dispatcher (worker threads) on
 * the emulators. The hooks write what they saw, and the job record as they found it, to a file.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildFixtureBundle, type EmulatorHarness, startHarness, stopHarness } from '../helpers/emulators';
import { runUntil } from '../helpers/run';
import { system } from '../helpers/system';

let h: EmulatorHarness | undefined;
const dir = mkdtempSync(join(tmpdir(), 'tw-hooks-'));
const journal = join(dir, 'hooks.jsonl');

beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => stopHarness(h));

describe('lifecycle hooks through the bundle, on the emulators', () => {
  it("run the task's and the app's hooks after the settle, with the result and the reason", async () => {
    mkdirSync(join(dir, 'tasks'));
    const note = `(what, ctx, detail) => require('node:fs').appendFileSync(${JSON.stringify(journal)}, JSON.stringify({ what, jobId: ctx.jobId, task: ctx.task, appData: ctx.appData, detail }) + '\\n')`;
    writeFileSync(
      join(dir, 'tasks', 'adder.ts'),
      `const note = ${note};
export default {
  name: 'adder', queue: 'work', timeLimitSeconds: 5, maxRetries: 0,
  run(payload: { a: number; b: number }) { if (payload.a < 0) throw new Error('negative'); return { sum: payload.a + payload.b }; },
  onSuccess(result: unknown, ctx: { jobId: string; task: string }) { note('task.onSuccess', ctx, result); },
  onArchived(error: { message: string }, reason: string, ctx: { jobId: string; task: string }) { note('task.onArchived', ctx, reason + ': ' + error.message); },
};
`,
    );
    writeFileSync(
      join(dir, 'taskworker.config.ts'),
      `const note = ${note};
export default {
  app: 'hooks', tasksDir: 'tasks',
  queues: [{ name: 'work', priority: 1, visibilityTimeoutSeconds: 30, longPollSeconds: 0 }],
  dispatcher: { concurrency: 4, timeoutSeconds: 60, settleMarginMs: 500, killGraceMs: 200 },
  hooks: {
    timeoutMs: 2000,
    onSuccess(_result: unknown, ctx: { jobId: string }) { note('app.onSuccess', ctx, null); },
    onArchived(_error: unknown, reason: string, ctx: { jobId: string }) { note('app.onArchived', ctx, reason); },
  },
};
`,
    );
    const bundle = await buildFixtureBundle(join(dir, 'taskworker.config.ts'));
    const s = await system(h as EmulatorHarness, bundle, { tracked: true });
    try {
      const [ok, bad] = await s.publisher.publishBatch([
        { task: 'adder', payload: { a: 2, b: 3 }, options: { appData: { tenant: 'acme' } } },
        { task: 'adder', payload: { a: -1, b: 3 } },
      ]);
      const seen = () =>
        readFileSync(journal, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { what: string; jobId: string; task?: string; appData: unknown; detail: unknown });
      writeFileSync(journal, '');
      await runUntil(s.runtime, 'four hooks', () => seen().length >= 4);
      expect(seen()).toEqual(
        expect.arrayContaining([
          { what: 'task.onSuccess', jobId: ok?.jobId, task: 'adder', appData: { tenant: 'acme' }, detail: { sum: 5 } },
          { what: 'app.onSuccess', jobId: ok?.jobId, task: 'adder', appData: { tenant: 'acme' }, detail: null },
          { what: 'task.onArchived', jobId: bad?.jobId, task: 'adder', appData: null, detail: 'exhausted: negative' },
          { what: 'app.onArchived', jobId: bad?.jobId, task: 'adder', appData: null, detail: 'exhausted' },
        ]),
      );
      expect(s.jobs().map((j) => j.hook)).toEqual(['ran', 'ran']);
    } finally {
      await s.close();
    }
  });
});

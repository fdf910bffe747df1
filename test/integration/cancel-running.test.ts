/**
 * Cancelling a running job and watching its progress, on the emulators under `taskworker dev`'s own
 * dispatcher processes, from the CLI. What happened is read from the jobs table and from the task's
 * own effect journal, counting entries rather than timing them where it can.
 */
import { join } from 'node:path';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { JobShowAnswer, ShownJob } from '../../lib/operate/answers';
import type { JobRecord } from '../../lib/track/job-record';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { cli } from '../helpers/cli';
import { tempFile } from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';

const CONFIG = join(__dirname, '..', 'fixtures', 'cancel', 'taskworker.config.ts');

describe('cancel a running job, and its progress, against taskworker dev', () => {
  let stack: LocalStack;
  const saved = { ...process.env };
  const run = (...argv: string[]) => cli(...argv, '--version', stack.version, '--config', CONFIG);
  const show = async (id: string) => (JSON.parse((await run('jobs', 'show', id, '--json')).out) as JobShowAnswer).job as ShownJob;

  beforeAll(async () => {
    stack = await startLocalStack({ configFile: CONFIG, version: 'cancel' });
    Object.assign(process.env, stack.env);
  });
  afterAll(async () => {
    process.env = saved;
    await stack.stop();
  });

  it.each([
    ['stops when its signal fires', false],
    ['ignores its signal: its thread is terminated after the kill grace', true],
  ])(
    'a running 60 s task that %s is cancelled: it ends cancelled within 5 s, no effect after the cancel, the rest of its batch succeeds, its message never runs again',
    async (_how, ignoreSignal) => {
      const journal = tempFile('effects.jsonl');
      const id = `long-${ignoreSignal ? 'stubborn' : 'polite'}`;
      const other = `quick-${ignoreSignal ? 'stubborn' : 'polite'}`;
      await stack.publisher.publishBatch([
        { task: 'long', payload: { journal, ignoreSignal }, options: { id } },
        { task: 'quick', payload: { journal }, options: { id: other } },
      ]);
      const effects = () => readJournal(journal).filter((e) => e.job === id);
      await eventually('a few effects of the running job', () => effects().filter((e) => e.what === 'effect').length >= 3, 30_000);

      // Progress shows while it runs (written with its lease writes).
      await eventually('its progress in jobs show --json', async () => {
        const shown = await show(id);
        return shown.state === 'running' && (JSON.parse(shown.progress ?? '{}') as { tick?: number }).tick !== undefined;
      });
      expect(await show(id)).toMatchObject({ progressAt: expect.any(Number) });

      const asked = await run('jobs', 'cancel', id);
      const askedAt = Date.now();
      expect({ code: asked.code, lines: asked.out.trim().split('\n') }).toEqual({
        code: 0,
        lines: [`job ${id} is running: asked it to stop; it ends cancelled within a few seconds (its dependents count it as failed)`],
      });
      await eventually('the job to end cancelled', async () => (await stack.jobs.get(id))?.state === 'cancelled', 5_000);
      expect(Date.now() - askedAt).toBeLessThan(5_000);
      const record = (await stack.jobs.get(id)) as JobRecord;
      expect(record).toMatchObject({ state: 'cancelled', attempt: 1, cancelRequestedAt: expect.any(Number) });
      expect(record.history.map((h) => h.what).slice(-2)).toEqual(['cancel-requested', 'cancelled']);

      // Its effect store: from the cancel on, the heartbeat-guarded effect was refused, and nothing
      // was applied after that. A task that stops on its signal may see the signal first (the cancel
      // watch and the next lease write race): then it ends there, its last line `aborted`; one that
      // ignores its signal must have been refused, or its effects would go on until its thread dies.
      const lines = effects().map((e) => e.what);
      const refused = lines.indexOf('refused');
      if (ignoreSignal) expect(refused).toBeGreaterThan(0);
      if (refused >= 0) expect(lines.slice(refused + 1).filter((w) => w === 'effect')).toEqual([]);
      if (!ignoreSignal) expect(lines.at(-1)).toBe('aborted');

      // The rest of its batch carried on.
      await eventually('the other job to succeed', async () => (await stack.jobs.get(other))?.state === 'succeeded', 10_000);

      // A copy of its message is a duplicate of a finished job: deleted unrun.
      await stack.sqs.send(
        new SendMessageCommand({
          QueueUrl: stack.urls.queues.long as string,
          MessageBody: encodeEnvelope({ task: 'long', payload: { journal, ignoreSignal }, id }),
        }),
      );
      await eventually(
        'the copy to be seen as a duplicate',
        async () => ((await stack.jobs.get(id))?.history ?? []).some((h) => h.what === 'skipped-duplicate'),
        20_000,
      );
      expect(effects().filter((e) => e.what === 'start')).toHaveLength(1);
      expect(await stack.jobs.get(id)).toMatchObject({ state: 'cancelled', attempt: 1 });
    },
    90_000,
  );
});

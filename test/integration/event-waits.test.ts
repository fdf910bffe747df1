/**
 * Event waits on the emulators (the app's SNS topic delivering to the queue, dispatchers as processes
 * running the Lambda handler): a non-matching event passes over a waiting job, a matching one resumes
 * it once even emitted twice, a wait times out with null. Read from the jobs table and the effects table.
 */
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { JobRecord } from '../../lib/track/job-record';
import { CHAOS_CONFIG, createEffectsTable, scanAll, until } from '../chaos/helpers/stage';

let stack: LocalStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

it('a non-matching event passes over the waiting job; two matching ones resume it once, with one of them; a wait times out with null', async () => {
  stack = await startLocalStack({ configFile: CHAOS_CONFIG, version: 'evwait', dispatchers: 1, logLevel: 'ERROR' });
  const local = stack;
  const table = await createEffectsTable(local.dynamo, 'event-effects');
  const record = async (jobId: string) =>
    (await scanAll(local.dynamo, local.tables.jobs)).find((r) => r.jobId === jobId) as JobRecord | undefined;
  const state = async (jobId: string) => (await record(jobId))?.state;
  const a = await local.publisher.publish('event-waiter', { table, order: 'o-1' });
  const b = await local.publisher.publish('event-waiter', { table, order: 'o-2' });
  const c = await local.publisher.publish('event-waiter', { table, order: 'o-3', timeout: '20s' });
  for (const j of [a, b, c]) expect(await until(async () => (await state(j.jobId)) === 'waiting-event', 60_000, 250)).toBe(true);

  await local.publisher.emit('chaos.paid', { order: 'o-9' });
  const matching = [
    { eventId: (await local.publisher.emit('chaos.paid', { order: 'o-1', n: 1 })).eventId, n: 1 },
    { eventId: (await local.publisher.emit('chaos.paid', { order: 'o-1', n: 2 })).eventId, n: 2 },
  ];
  expect(await until(async () => (await state(a.jobId)) === 'succeeded', 60_000, 250)).toBe(true);
  const done = (await record(a.jobId)) as JobRecord;
  // Resumed by whichever of the two reached a dispatcher first: SNS and a standard queue keep no order
  // between two events emitted together (CI saw the second win), so either may be the one, never both.
  const resumedWith = JSON.parse(done.result ?? 'null') as { id: string; name: string; payload: { order: string; n: number } };
  expect(matching.map(({ eventId, n }) => ({ id: eventId, name: 'chaos.paid', payload: { order: 'o-1', n } }))).toContainEqual({
    id: resumedWith.id,
    name: resumedWith.name,
    payload: resumedWith.payload,
  });
  expect(done.history.filter((h) => h.what === 'event-received')).toHaveLength(1);
  expect(done.history.filter((h) => h.what === 'started')).toHaveLength(2);

  expect(await until(async () => (await state(c.jobId)) === 'succeeded', 90_000, 500)).toBe(true);
  expect((await record(c.jobId))?.result).toBe('null');
  // The o-2 job saw three events, none its own: still waiting.
  expect(await state(b.jobId)).toBe('waiting-event');
  const effects = new Map((await scanAll(local.dynamo, table)).map((e) => [String(e.pk), e]));
  for (const j of [a, c]) {
    for (const step of ['before', 'after'])
      expect([j.jobId, step, effects.get(`${j.jobId}#${step}`)?.tries, effects.get(`${j.jobId}#${step}`)?.done]).toEqual([
        j.jobId,
        step,
        1,
        1,
      ]);
  }
  expect(effects.get(`${b.jobId}#after`)).toBeUndefined();
}, 240_000);

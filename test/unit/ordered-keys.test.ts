import { Simulation } from '../../bench/sim/engine';
import { renderKeyView } from '../../cli/render';
import { PublishOptionError, TaskDefinitionError } from '../../lib/errors';
import { SQS_MESSAGE_LIMIT_BYTES } from '../../lib/layout/sqs-limits';
import { keyView } from '../../lib/operate/keys';
import type { QueueClient, SendEntry } from '../../lib/ports';
import { GAP_GRACE_MS, orderTag } from '../../lib/settle/key-order';
import { defineTask, type TaskOptions } from '../../lib/tasks/task';
import { createTestSystem } from '../../lib/testing/system';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { publisherOf, type World, world } from '../helpers/world';

/** Per key, the job ids in start order (a retry's start too), and the most of a key running at once. */
function ledger() {
  const starts = new Map<string, string[]>();
  const running = new Map<string, number>();
  let overlaps = 0;
  return {
    starts,
    overlaps: () => overlaps,
    async run(key: string, id: string, sleep: () => Promise<void>) {
      starts.set(key, [...(starts.get(key) ?? []), id]);
      running.set(key, (running.get(key) ?? 0) + 1);
      if ((running.get(key) ?? 0) > 1) overlaps += 1;
      try {
        await sleep();
      } finally {
        running.set(key, (running.get(key) ?? 0) - 1);
      }
    },
  };
}

/** Start order with a retry's start folded into its job's: what publish order is compared with. */
const firstStarts = (ids: readonly string[]) => ids.filter((id, i) => ids.indexOf(id) === i);

/** A publisher whose messages are kept, not sent: the test delivers them in the order it likes. */
function capturing(w: World<Simulation>, publisherOn: (w: World<Simulation>) => ReturnType<typeof publisherOf>) {
  const kept: Array<{ url: string; entry: SendEntry }> = [];
  const queues: QueueClient = {
    ...w.sqs,
    receive: w.sqs.receive.bind(w.sqs),
    deleteBatch: w.sqs.deleteBatch.bind(w.sqs),
    changeVisibilityBatch: w.sqs.changeVisibilityBatch.bind(w.sqs),
    depth: w.sqs.depth.bind(w.sqs),
    async sendBatch(url, entries) {
      for (const entry of entries) kept.push({ url, entry });
      return { messageIds: Object.fromEntries(entries.map((e) => [e.id, `m-${kept.length}-${e.id}`])), failed: [] };
    },
  };
  return { kept, publisher: publisherOn({ ...w, sqs: queues } as unknown as World<Simulation>) };
}

/** A deterministic shuffle (the same every run). */
function shuffled<T>(items: readonly T[], seed = 7): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

function orderedWorld(options: { onFailure?: 'continue' | 'block'; fails: (id: string, attempt: number) => boolean }) {
  const sim = new Simulation();
  const book = ledger();
  const task: TaskOptions = {
    name: 'apply',
    queue: 'urgent',
    timeLimitSeconds: 5,
    maxRetries: 2,
    backoff: { baseSeconds: 2, capSeconds: 2 },
    ordered: options.onFailure ? { onFailure: options.onFailure } : true,
    run: async (payload, ctx) => {
      const { account } = payload as { account: string };
      await book.run(account, ctx.jobId, () => sim.sleep(300));
      if (options.fails(ctx.jobId, ctx.attempt)) throw new Error(`${ctx.jobId} fails at attempt ${ctx.attempt}`);
    },
  };
  const w = world(
    [task],
    { dispatcher: { concurrency: 8, timeoutSeconds: 900, settleMarginMs: 500, killGraceMs: 100 } },
    { tracked: true, simulation: sim },
  );
  const publisher = (over?: World<Simulation>) => publisherOf((over ?? w) as unknown as World, { tasks: [defineTask(task)] });
  return { sim, w, book, publisher };
}

describe('ordered keys (fakes, simulated time)', () => {
  it('runs each key one job at a time in publish order, though its numbered messages arrive shuffled and some fail once', async () => {
    const failOnce = new Set(['a1-3', 'a2-0', 'a4-19', 'a0-7', 'a3-11']);
    const { w, book } = orderedWorld({ fails: (id, attempt) => failOnce.has(id) && attempt === 1 });
    const accounts = ['a0', 'a1', 'a2', 'a3', 'a4'];
    // Numbered as a publisher numbers them, every message sent (none parked at publish), delivered in shuffled order.
    const bodies: string[] = [];
    for (const account of accounts) {
      const last = await w.jobs.takeNumbers('apply', account, 20, w.clock.now());
      for (let i = 0; i < 20; i++)
        bodies.push(encodeEnvelope({ task: 'apply', id: `${account}-${i}`, key: account, seq: last - 19 + i, payload: { account } }));
    }
    for (const body of shuffled(bodies)) await w.send('urgent', body);
    await w.run({ forMs: 1_800_000 });
    expect(book.overlaps()).toBe(0);
    for (const account of accounts) {
      const ids = book.starts.get(account) ?? [];
      expect({ account, order: firstStarts(ids) }).toEqual({ account, order: Array.from({ length: 20 }, (_, i) => `${account}-${i}`) });
      // A failing job held its key: its retry started right after its first attempt, before the next job.
      for (const id of failOnce) if (id.startsWith(`${account}-`)) expect(ids[ids.indexOf(id) + 1]).toBe(id);
    }
    const records = await Promise.all(bodies.map((b) => w.jobs.get((JSON.parse(b) as { id: string }).id)));
    expect(records.every((r) => r?.state === 'succeeded')).toBe(true);
    expect(records.filter((r) => r?.history.some((h) => h.what === 'waiting-key')).length).toBeGreaterThan(50);
    // Every key's line is left empty and its turn past its last job.
    for (const account of accounts) {
      expect(await w.jobs.lineEntries(orderTag('apply', account), 5)).toEqual([]);
      expect(await w.jobs.keyOrder('apply', account)).toMatchObject({ last: 20, next: 21 });
    }
  });

  it("the publisher sends a key's turn and parks the rest in its line: one message per key, the jobs in publish order", async () => {
    const { w, book, publisher: publisherOn } = orderedWorld({ fails: () => false });
    const { kept, publisher } = capturing(w, publisherOn);
    const accounts = ['b0', 'b1', 'b2'];
    const published = [];
    for (const account of accounts)
      published.push(
        ...(await publisher.publishBatch(
          Array.from({ length: 10 }, (_, i) => ({ task: 'apply', payload: { account }, options: { key: account, id: `${account}-${i}` } })),
        )),
      );
    // One message per key (its turn); the other nine of each parked, with no message id.
    expect(kept.map((k) => (JSON.parse(k.entry.body) as { id: string }).id)).toEqual(['b0-0', 'b1-0', 'b2-0']);
    expect(published.filter((p) => p.messageId === '' && p.inLine)).toHaveLength(27);
    expect((await w.jobs.get('b1-4'))?.state).toBe('waiting-key');
    for (const { entry } of kept) await w.send('urgent', entry.body);
    await w.run({ forMs: 600_000 });
    for (const account of accounts)
      expect(firstStarts(book.starts.get(account) ?? [])).toEqual(Array.from({ length: 10 }, (_, i) => `${account}-${i}`));
    // Each parked job was sent once, by the end of the one before it: none came back by its due time.
    const b5 = await w.jobs.get('b2-5');
    expect(b5?.history.map((h) => h.what)).toEqual(['waiting-key', 'scheduled', 'queued', 'started', 'succeeded']);
    expect(b5?.history[1]?.detail).toMatch(/^its turn came \(#6 of its key\)/);
  });

  it("onFailure 'continue' runs the next job once the failing one is archived; 'block' holds the key", async () => {
    for (const onFailure of ['continue', 'block'] as const) {
      const { w, book, publisher: publisherOn } = orderedWorld({ onFailure, fails: (id) => id === 'k-1' });
      const publisher = publisherOn();
      for (let i = 0; i < 4; i++) await publisher.publish('apply', { account: 'k' }, { key: 'k', id: `k-${i}` });
      await w.run({ forMs: 600_000 });
      expect((await w.jobs.get('k-1'))?.state).toBe('archived');
      const ran = firstStarts(book.starts.get('k') ?? []);
      if (onFailure === 'continue') expect(ran).toEqual(['k-0', 'k-1', 'k-2', 'k-3']);
      else {
        expect(ran).toEqual(['k-0', 'k-1']);
        expect((await w.jobs.get('k-2'))?.state).toBe('waiting-key');
        expect(await w.jobs.keyOrder('apply', 'k')).toMatchObject({ next: 2 });
        // The key view (`keys show`, the dashboard's key page) says who holds the key and who waits behind it.
        const view = await keyView({ clock: w.clock, jobs: w.jobs }, 'apply', 'k');
        expect(view).toEqual({
          task: 'apply',
          key: 'k',
          order: { last: 4, next: 2, pending: 3 },
          line: [
            { jobId: 'k-1', place: 1, number: 2, state: 'archived' },
            { jobId: 'k-2', place: 2, number: 3, state: 'waiting-key' },
            { jobId: 'k-3', place: 3, number: 4, state: 'waiting-key' },
          ],
        });
        expect(renderKeyView(view)).toMatch(/order: turn at #2, last #4, 3 not ended[\s\S]*1 +#2 +k-1 +archived/);
      }
    }
  });

  it('skips a number no job arrived with (a publisher that died after numbering) after the grace, and never before', async () => {
    const { sim, w, book, publisher: publisherOn } = orderedWorld({ fails: () => false });
    const publisher = publisherOn();
    await publisher.publish('apply', { account: 'g' }, { key: 'g', id: 'g-0' });
    // A publisher took number 2 and died before sending it.
    await w.jobs.takeNumbers('apply', 'g', 1, sim.now());
    for (let i = 1; i <= 3; i++) await publisher.publish('apply', { account: 'g' }, { key: 'g', id: `g-${i}` });
    const from = sim.now();
    await w.run({ forMs: GAP_GRACE_MS / 2 });
    expect(firstStarts(book.starts.get('g') ?? [])).toEqual(['g-0']);
    // Invocations a minute long, as the schedule runs them: each sweeps the parked jobs that are due.
    for (let minute = 0; minute < 5; minute++) await w.run({ forMs: 60_000 });
    expect(firstStarts(book.starts.get('g') ?? [])).toEqual(['g-0', 'g-1', 'g-2', 'g-3']);
    expect(sim.now() - from).toBeGreaterThanOrEqual(GAP_GRACE_MS);
    expect(await w.jobs.keyOrder('apply', 'g')).toMatchObject({ last: 5, next: 6 });
  });

  it("hands a batch back when its key's order cannot be read, and runs it in order once it can", async () => {
    const { w, book, publisher: publisherOn } = orderedWorld({ fails: () => false });
    const publisher = publisherOn();
    for (let i = 0; i < 4; i++) await publisher.publish('apply', { account: 'e' }, { key: 'e', id: `e-${i}` });
    const read = w.jobs.keyOrder.bind(w.jobs);
    let refusals = 0;
    w.jobs.keyOrder = async (task, key) => {
      if (refusals++ < 2) throw new Error('ProvisionedThroughputExceededException');
      return read(task, key);
    };
    await w.run({ forMs: 120_000 });
    expect(refusals).toBeGreaterThan(2);
    expect(firstStarts(book.starts.get('e') ?? [])).toEqual(['e-0', 'e-1', 'e-2', 'e-3']);
    const handedBack = w.reports.flatMap((r) => r.jobs).filter((j) => j.outcome === 'deferred' && !j.parked);
    expect(handedBack.length).toBeGreaterThan(0);
  });

  it("numbers another SDK's message (no seq) when it first arrives, and runs it in that order", async () => {
    const { w, book } = orderedWorld({ fails: () => false });
    for (let i = 0; i < 3; i++)
      await w.send('urgent', encodeEnvelope({ task: 'apply', id: `raw-${i}`, key: 'r', payload: { account: 'r' } }));
    await w.run({ forMs: 120_000 });
    expect(firstStarts(book.starts.get('r') ?? [])).toEqual(['raw-0', 'raw-1', 'raw-2']);
    expect((await w.jobs.get('raw-1'))?.seq).toBe(2);
    // One at SQS's limit already, that its number would push over: archived saying so, not looped on.
    const filler = 'x'.repeat(SQS_MESSAGE_LIMIT_BYTES - 120);
    const full = encodeEnvelope({ task: 'apply', id: 'full', key: 'r', payload: { account: 'r', filler } });
    const padded = encodeEnvelope({
      task: 'apply',
      id: 'full',
      key: 'r',
      payload: { account: 'r', filler: filler + 'x'.repeat(SQS_MESSAGE_LIMIT_BYTES - Buffer.byteLength(full)) },
    });
    expect(Buffer.byteLength(padded)).toBe(SQS_MESSAGE_LIMIT_BYTES);
    await w.send('urgent', padded);
    await w.run({ forMs: 10_000 });
    const archived = w.reports.flatMap((r) => r.jobs).find((j) => j.outcome === 'archived');
    expect(archived).toMatchObject({ reason: 'malformed' });
    expect(book.starts.get('r')).toHaveLength(3);
  });

  it('refuses an ordered task or job where the order cannot hold, naming the field', async () => {
    const base = { name: 't', queue: 'q', timeLimitSeconds: 1, run: () => {} };
    expect(() => defineTask({ ...base, ordered: { onFailure: 'stop' as 'block' } })).toThrow(/ordered\.onFailure = "stop"/);
    expect(() => defineTask({ ...base, ordered: 'yes' as unknown as true })).toThrow(/ordered = "yes"/);
    expect(() => defineTask({ ...base, ordered: { onFailur: 'block' } as never })).toThrow(/ordered\.onFailur/);
    expect(() => defineTask({ ...base, ordered: true, unique: { for: '1m' } })).toThrow(/unique .*no unique on an ordered task/);
    expect(() => defineTask({ ...base, ordered: true, limits: { concurrency: 2, per: 'key' } })).toThrow(/limits\.per/);
    expect(() =>
      createTestSystem({
        tasks: [defineTask({ ...base, ordered: true })],
        config: { app: 'a', queues: [{ name: 'q', priority: 1, tracking: 'failures' }] },
      }),
    ).toThrow(TaskDefinitionError);
    const system = createTestSystem({ tasks: [defineTask({ ...base, queue: 'default', ordered: true })] });
    await expect(system.publish('t', {}, { key: 'k', delaySeconds: 5 })).rejects.toThrow(PublishOptionError);
    await expect(system.publish('t', {}, { key: 'k', delaySeconds: 5 })).rejects.toThrow(/delaySeconds .*ordered/);
  });

  it('taskworker/testing keeps the order too', async () => {
    const seen: number[] = [];
    const task = defineTask({
      name: 'ledger',
      queue: 'default',
      timeLimitSeconds: 10,
      ordered: true,
      async run(payload: { n: number }) {
        // The later a job, the sooner it would end were they run side by side.
        for (let turn = 0; turn < (12 - payload.n) * 5; turn++) await Promise.resolve();
        seen.push(payload.n);
      },
    });
    const system = createTestSystem({ tasks: [task] });
    for (let n = 0; n < 12; n++) await system.publish(task, { n }, { key: 'acct' });
    await system.drain();
    expect(seen).toEqual(Array.from({ length: 12 }, (_, n) => n));
  });
});

/**
 * Events from the CLI against `taskworker dev` with the example app: `emit` runs both subscribers
 * of orders.placed once (read from the jobs table), prints their job ids; `jobs show` names the
 * event; `events` lists them with today's counts; a payload the declared validator refuses and an
 * undeclared event are one line each, and nothing is sent.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { EventsView } from '../../lib/operate/events';
import { cli } from '../helpers/cli';
import { EXAMPLE_CONFIG_FILE } from '../helpers/infra';
import { eventually } from '../helpers/run';

describe('events from the CLI, against taskworker dev', () => {
  let stack: LocalStack;
  const saved = { ...process.env };
  const run = (...argv: string[]) => cli(...argv, '--version', stack.version, '--config', EXAMPLE_CONFIG_FILE);
  const state = async (id: string) => (await stack.jobs.get(id))?.state;

  beforeAll(async () => {
    stack = await startLocalStack({ configFile: EXAMPLE_CONFIG_FILE, schedules: false });
    Object.assign(process.env, stack.env);
  }, 120_000);
  afterAll(async () => {
    process.env = saved;
    await stack.stop();
  });

  it('emit runs each subscriber once and prints their jobs; jobs show names the event; events counts them', async () => {
    const payload = JSON.stringify({ order: 'o-7', email: 'a@example.com', cents: 4250 });
    const emitted = await run('emit', 'orders.placed', '--payload', payload, '--id', 'placed-o-7', '--json');
    expect({ code: emitted.code, err: emitted.err }).toEqual({ code: 0, err: '' });
    const out = JSON.parse(emitted.out) as { eventId: string; subscribers: Array<{ task: string; queue: string; jobId: string }> };
    expect(out.eventId).toBe('placed-o-7');
    expect(out.subscribers).toEqual([
      { task: 'award-loyalty-points', queue: 'low_priority', jobId: 'placed-o-7/award-loyalty-points' },
      { task: 'send-order-confirmation', queue: 'high_priority', jobId: 'placed-o-7/send-order-confirmation' },
    ]);
    await eventually(
      'both subscribers to succeed',
      async () =>
        (await state('placed-o-7/award-loyalty-points')) === 'succeeded' &&
        (await state('placed-o-7/send-order-confirmation')) === 'succeeded',
      60_000,
    );
    expect(await stack.jobs.get('placed-o-7/award-loyalty-points')).toMatchObject({ attempt: 1, result: JSON.stringify({ points: 42 }) });
    const shown = await run('jobs', 'show', 'placed-o-7/send-order-confirmation');
    expect(shown.out).toMatch(/event\s+orders\.placed placed-o-7 from taskworker, emitted \d{4}-/);
    // Stats are flushed by each dispatcher within 5 s of the batch (lib/invocation/stats-buffer.ts).
    let events: EventsView | undefined;
    await eventually(
      'today’s counts',
      async () => {
        events = JSON.parse((await run('events', '--json')).out) as EventsView;
        return events.emits[0]?.subscribers.every((s) => s.today?.succeeded === 1) === true;
      },
      30_000,
    );
    expect(events?.emits).toEqual([
      {
        name: 'orders.placed',
        description: 'A customer placed an order',
        subscribers: [
          { task: 'award-loyalty-points', queue: 'low_priority', today: { succeeded: 1, retried: 0, archived: 0 } },
          { task: 'send-order-confirmation', queue: 'high_priority', today: { succeeded: 1, retried: 0, archived: 0 } },
        ],
      },
    ]);
  }, 90_000);

  it('emit --payload @FILE: an event over SNS’s 256 KiB goes through the bucket, and each subscriber runs once with it', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tw-emit-')), 'order.json');
    writeFileSync(file, JSON.stringify({ order: 'o-big', email: 'b@example.com', cents: 100, note: 'n'.repeat(300_000) }));
    const emitted = await run('emit', 'orders.placed', '--payload', `@${file}`, '--id', 'placed-big', '--json');
    expect({ code: emitted.code, err: emitted.err }).toEqual({ code: 0, err: '' });
    const ids = (JSON.parse(emitted.out) as { subscribers: Array<{ jobId: string }> }).subscribers.map((s) => s.jobId);
    expect(ids).toHaveLength(2);
    await eventually(
      'both subscribers to succeed',
      async () => (await Promise.all(ids.map(state))).every((s) => s === 'succeeded'),
      30_000,
    );
    const missing = await run('emit', 'orders.placed', '--payload', '@no-such-file.json');
    expect(missing.err.trim()).toMatch(/^taskworker: --payload @no-such-file.json: cannot read "no-such-file.json" \(ENOENT\)$/);
  }, 60_000);

  it('refuses in one line, sending nothing: a payload the validator refuses, an undeclared event, bad JSON', async () => {
    const bad = await run('emit', 'orders.placed', '--payload', '{"order":1}', '--id', 'bad-7');
    expect({ code: bad.code, lines: bad.err.trim().split('\n') }).toEqual({
      code: 2,
      lines: [
        expect.stringMatching(/Invalid payload for event "orders.placed": expected \{ order: string, email: string, cents: number \}/),
      ],
    });
    const unknown = await run('emit', 'orders.shipped', '--payload', '{}');
    expect(unknown.err.trim().split('\n')).toEqual([expect.stringMatching(/Unknown event "orders.shipped".*\(orders.placed\)/)]);
    const json = await run('emit', 'orders.placed', '--payload', '{nope');
    expect(json.err).toMatch(/--payload is not valid JSON/);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await stack.jobs.get('bad-7/send-order-confirmation')).toBeUndefined();
  }, 30_000);
});

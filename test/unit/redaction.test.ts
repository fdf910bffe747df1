/**
 * Payloads as the jobs table keeps them and every view shows them (lib/policy/redaction.ts,
 * lib/dispatch/claim.ts, lib/operate/archive.ts): a task's `redact` fields masked, the run given
 * the whole payload, small payloads kept on the record by the first claim, archived bodies masked
 * in views and kept whole for replay.
 */
import { resolveConfig } from '../../lib/config/app-config';
import { TaskDefinitionError } from '../../lib/errors';
import { listArchived, replayArchived, shownArchived } from '../../lib/operate/archive';
import { keptPayload, REDACTED, redact } from '../../lib/policy/redaction';
import { defineTask, type TaskOptions } from '../../lib/tasks/task';
import { operatorContextOf, world } from '../helpers/world';

describe('redact', () => {
  const payload = {
    user: 'ada',
    card: { number: '4111 1111 1111 1111', expiry: '12/29' },
    cards: [{ number: '1' }, { number: '2' }],
    password: 'p',
  };

  it('masks each dotted path, through arrays, and leaves the original as it was', () => {
    const before = structuredClone(payload);
    expect(redact(payload, ['card.number', 'cards.number', 'password', 'no.such.path'])).toEqual({
      user: 'ada',
      card: { number: REDACTED, expiry: '12/29' },
      cards: [{ number: REDACTED }, { number: REDACTED }],
      password: REDACTED,
    });
    expect(payload).toEqual(before);
    expect(redact('text', ['a'])).toBe('text');
    expect(redact(null, ['a'])).toBeNull();
    expect(redact({ a: null }, ['a.b'])).toEqual({ a: null });
  });

  it('keeps the masked JSON up to the byte bound (UTF-8), none past it or with a bound of 0', () => {
    expect(keptPayload({ pin: '1234', n: 1 }, ['pin'], 512)).toBe('{"pin":"[redacted]","n":1}');
    expect(keptPayload({ s: 'é'.repeat(300) }, undefined, 512)).toBeUndefined();
    expect(keptPayload({ s: 'e'.repeat(300) }, undefined, 512)).toBe(JSON.stringify({ s: 'e'.repeat(300) }));
    expect(keptPayload({ a: 1 }, undefined, 0)).toBeUndefined();
    expect(keptPayload(undefined, undefined, 512)).toBe('null');
  });

  it.each([[['']], [['a..b']], [['has space']], [['a', 'a']], ['card.number'], [[1]]])('refuses redact %j naming the field', (paths) => {
    expect(() => defineTask({ name: 'pay', queue: 'urgent', timeLimitSeconds: 5, redact: paths as never, run: () => undefined })).toThrow(
      expect.objectContaining({ name: TaskDefinitionError.name, field: 'redact' }),
    );
  });
});

describe('tracking.keepPayloadBytes', () => {
  const config = (keepPayloadBytes: unknown) =>
    resolveConfig({ app: 'a', queues: [{ name: 'urgent', priority: 1 }], tracking: { keepPayloadBytes } as never });

  it('defaults to 512 and takes 0 (keep none) to 4096', () => {
    expect(resolveConfig({ app: 'a', queues: [{ name: 'urgent', priority: 1 }] }).tracking.keepPayloadBytes).toBe(512);
    expect(config(0).tracking.keepPayloadBytes).toBe(0);
    expect(config(4096).tracking.keepPayloadBytes).toBe(4096);
  });

  it.each([4097, -1, 1.5, '1kb'])('refuses %j naming the field', (value) => {
    expect(() => config(value)).toThrow(/tracking\.keepPayloadBytes/);
  });
});

describe('a job’s payload on its record', () => {
  const seen: unknown[] = [];
  const pay: TaskOptions = {
    name: 'pay',
    queue: 'urgent',
    timeLimitSeconds: 5,
    maxRetries: 1,
    backoff: { baseSeconds: 0, capSeconds: 0 },
    redact: ['card.number'],
    run: (payload: unknown, ctx) => {
      seen.push(payload);
      if ((payload as { fail?: string }).fail === 'always' || ((payload as { fail?: string }).fail === 'once' && ctx.attempt === 1))
        throw new Error('declined');
    },
  };

  it('is kept masked by the first claim; the run gets it whole; a retry leaves it; a large one is not kept', async () => {
    seen.length = 0;
    const w = world([pay], {}, { tracked: true });
    const small = { card: { number: '4111', expiry: '12/29' }, fail: 'once' };
    const large = { card: { number: '4111' }, note: 'x'.repeat(600) };
    await w.send('urgent', JSON.stringify({ task: 'pay', id: 'small', payload: small }));
    await w.send('urgent', JSON.stringify({ task: 'pay', id: 'large', payload: large }));
    await w.run({ forMs: 30_000 });
    expect(seen).toContainEqual(small);
    expect(await w.jobs.get('small')).toMatchObject({
      state: 'succeeded',
      attempt: 2,
      payload: '{"card":{"number":"[redacted]","expiry":"12/29"},"fail":"once"}',
    });
    const big = await w.jobs.get('large');
    expect(big?.state).toBe('succeeded');
    expect(big?.payload).toBeUndefined();
  });

  it('an archived job: its archive record names the paths, views mask them, and a replay sends the body whole', async () => {
    seen.length = 0;
    const w = world([pay], {}, { tracked: true });
    const payload = { card: { number: '4111', expiry: '12/29' }, fail: 'always' };
    await w.send('urgent', JSON.stringify({ task: 'pay', id: 'declined', payload }));
    await w.run({ forMs: 30_000 });
    const ctx = operatorContextOf(w);
    const [archived] = await listArchived(ctx, { jobId: 'declined' }, 1);
    expect(archived?.record?.redact).toEqual(['card.number']);
    expect(JSON.parse(archived?.body ?? '{}').payload).toEqual(payload);
    expect(JSON.parse(shownArchived(archived as NonNullable<typeof archived>).body).payload).toEqual({
      card: { number: REDACTED, expiry: '12/29' },
      fail: 'always',
    });
    seen.length = 0;
    expect((await replayArchived(ctx, { jobId: 'declined' }, 1)).replayed).toBe(1);
    await w.run({ forMs: 30_000 });
    expect(seen[0]).toEqual(payload);
  });
});

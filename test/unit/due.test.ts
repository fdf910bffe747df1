import { PublishOptionError } from '../../lib/errors';
import {
  arrivalTiming,
  DUE_SHARDS,
  dueShardOf,
  MAX_SCHEDULE_SECONDS,
  publishTiming,
  sweepDelaySeconds,
  sweepHorizon,
} from '../../lib/policy/due-times';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);

describe('publishTiming', () => {
  it('keeps delays up to 900 s as SQS DelaySeconds and carries longer ones as runAt', () => {
    expect(publishTiming(NOW, {})).toEqual({});
    expect(publishTiming(NOW, { delaySeconds: 0 })).toEqual({});
    expect(publishTiming(NOW, { delaySeconds: 900 })).toEqual({ delaySeconds: 900 });
    expect(publishTiming(NOW, { delaySeconds: 901 })).toEqual({ runAt: NOW + 901_000 });
    expect(publishTiming(NOW, { delaySeconds: MAX_SCHEDULE_SECONDS })).toEqual({ runAt: NOW + MAX_SCHEDULE_SECONDS * 1000 });
  });

  it('carries a runAt date, covered by SQS delay when 15 minutes away or nearer; a past one runs now', () => {
    expect(publishTiming(NOW, { runAt: new Date(NOW + 1_500) })).toEqual({ runAt: NOW + 1_500, delaySeconds: 2 });
    expect(publishTiming(NOW, { runAt: new Date(NOW + 900_000) })).toEqual({ runAt: NOW + 900_000, delaySeconds: 900 });
    expect(publishTiming(NOW, { runAt: new Date(NOW + 900_001) })).toEqual({ runAt: NOW + 900_001 });
    expect(publishTiming(NOW, { runAt: new Date(NOW - 5_000) })).toEqual({ runAt: NOW - 5_000 });
  });

  it('names the option and the value it refuses', () => {
    expect(() => publishTiming(NOW, { delaySeconds: MAX_SCHEDULE_SECONDS + 1 })).toThrow(
      /delaySeconds = 31622401: expected an integer 0\.\.31622400/,
    );
    expect(() => publishTiming(NOW, { delaySeconds: 1.5 })).toThrow(PublishOptionError);
    expect(() => publishTiming(NOW, { delaySeconds: -1 })).toThrow(/delaySeconds = -1/);
    expect(() => publishTiming(NOW, { runAt: new Date(Number.NaN) })).toThrow(/runAt .*a valid Date/);
    expect(() => publishTiming(NOW, { runAt: '2027-01-01' as unknown as Date })).toThrow(/runAt .*a valid Date/);
    expect(() => publishTiming(NOW, { runAt: new Date(NOW + (MAX_SCHEDULE_SECONDS + 1) * 1000) })).toThrow(/at most 366 days ahead/);
    expect(() => publishTiming(NOW, { delaySeconds: 5, runAt: new Date(NOW) })).toThrow(/either delaySeconds or runAt/);
  });
});

describe('arrivalTiming', () => {
  it('runs what is due (within a second of slack), delays what is within 15 minutes, parks the rest', () => {
    expect(arrivalTiming(undefined, NOW)).toEqual({ kind: 'due' });
    expect(arrivalTiming(NOW - 10_000, NOW)).toEqual({ kind: 'due' });
    expect(arrivalTiming(NOW + 1_000, NOW)).toEqual({ kind: 'due' });
    expect(arrivalTiming(NOW + 1_001, NOW)).toEqual({ kind: 'delay', seconds: 2 });
    expect(arrivalTiming(NOW + 900_000, NOW)).toEqual({ kind: 'delay', seconds: 900 });
    expect(arrivalTiming(NOW + 900_001, NOW)).toEqual({ kind: 'park' });
  });
});

describe('the sweep', () => {
  it('sends what starts within 15 minutes, delayed so it is visible at its runAt and never before', () => {
    expect(sweepHorizon(NOW)).toBe(NOW + 900_000);
    expect(sweepDelaySeconds(NOW + 899_001, NOW)).toBe(900);
    expect(sweepDelaySeconds(NOW + 10_500, NOW)).toBe(11);
    expect(sweepDelaySeconds(NOW - 60_000, NOW)).toBe(0);
    expect(sweepDelaySeconds(NOW + 3_600_000, NOW)).toBe(900);
  });

  it('spreads job ids over the shards, the same shard for the same id', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) counts.set(dueShardOf(`job-${i}`), (counts.get(dueShardOf(`job-${i}`)) ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual(Array.from({ length: DUE_SHARDS }, (_, i) => String(i)));
    for (const n of counts.values()) expect(n).toBeGreaterThan(800);
    expect(dueShardOf('reminder-42')).toBe(dueShardOf('reminder-42'));
  });
});

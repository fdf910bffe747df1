import { seededRandom } from '../../lib/random';
import { retryDelaySeconds } from '../../lib/tasks/backoff';

describe('retryDelaySeconds (exponential, full jitter)', () => {
  const policy = { baseSeconds: 2, capSeconds: 60 };

  it('stays within [0, min(cap, base·2^(n−1))]', () => {
    const random = seededRandom(7);
    for (let failed = 1; failed <= 12; failed++) {
      const ceiling = Math.min(60, 2 * 2 ** (failed - 1));
      for (let i = 0; i < 200; i++) {
        const delay = retryDelaySeconds(failed, policy, random);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }
    }
  });

  it('spreads retries across the whole window (jitter), not at its edge', () => {
    const random = seededRandom(11);
    const delays = Array.from({ length: 1000 }, () => retryDelaySeconds(6, policy, random));
    const mean = delays.reduce((a, b) => a + b, 0) / delays.length;
    expect(mean).toBeGreaterThan(25);
    expect(mean).toBeLessThan(35);
    expect(new Set(delays).size).toBeGreaterThan(40);
  });

  it('is the same for the same seed', () => {
    const a = seededRandom(3);
    const b = seededRandom(3);
    expect(Array.from({ length: 20 }, () => retryDelaySeconds(4, policy, a))).toEqual(
      Array.from({ length: 20 }, () => retryDelaySeconds(4, policy, b)),
    );
  });

  it('never exceeds the SQS visibility maximum', () => {
    expect(retryDelaySeconds(60, { baseSeconds: 1000, capSeconds: 43_200 }, () => 0.999999)).toBeLessThanOrEqual(43_200);
  });
});

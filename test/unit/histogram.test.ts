import { emptyHistogram, mergeHistogram, quantile, recordValue } from '../../lib/policy/histogram';

describe('histogram', () => {
  it('estimates quantiles within 10 %', () => {
    const h = emptyHistogram();
    for (let v = 1; v <= 1000; v++) recordValue(h, v);
    expect(quantile(h, 0.5)).toBeGreaterThanOrEqual(500);
    expect(quantile(h, 0.5)).toBeLessThanOrEqual(550);
    expect(quantile(h, 0.99)).toBeGreaterThanOrEqual(990);
    expect(quantile(h, 0.99)).toBeLessThanOrEqual(1000);
    expect(h.count).toBe(1000);
    expect(h.max).toBe(1000);
  });

  it('merges as if all values went into one', () => {
    const a = emptyHistogram();
    const b = emptyHistogram();
    const all = emptyHistogram();
    for (let v = 0; v < 300; v++) {
      recordValue(v % 2 ? a : b, v * 7);
      recordValue(all, v * 7);
    }
    mergeHistogram(a, b);
    expect(a).toEqual(all);
  });

  it('is NaN when empty', () => {
    expect(quantile(emptyHistogram(), 0.5)).toBeNaN();
  });
});

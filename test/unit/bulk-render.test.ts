/**
 * What the operator reads: `taskworker status` lists the rate-limit pauses in force, `versionStatus`
 * leaves out ended ones, and `jobs bulk` says what a dry run would do and what a run did.
 */
import { renderBulk } from '../../cli/bulk-command';
import { renderStatus } from '../../cli/render';
import { versionStatus } from '../../lib/operate/version-status';
import { dashboard } from '../helpers/dashboard';

describe('rate-limit pauses in status', () => {
  it('lists the live pauses, soonest first, and leaves ended ones out', async () => {
    const { ctx } = dashboard();
    const now = ctx.clock.now();
    await ctx.controls?.pause('task:send-email', now + 90_000, now);
    await ctx.controls?.pause('key:sync:acct-1', now + 30_000, now);
    await ctx.controls?.pause('queue:urgent', now - 1, now - 10_000);
    const status = await versionStatus(ctx);
    expect(status.rateLimits).toEqual([
      { scope: 'key:sync:acct-1', until: now + 30_000 },
      { scope: 'task:send-email', until: now + 90_000 },
    ]);
    const text = renderStatus(status);
    expect(text).toContain(`rate limited: key:sync:acct-1 held until ${new Date(now + 30_000).toISOString()} (RateLimitedError)`);
    expect(text).not.toContain('queue:urgent');
  });
});

describe('jobs bulk output', () => {
  const base = { filter: {}, skipped: [], sample: [], startedAt: 0, endedAt: 2_500, capped: false };
  it('a dry run names the count and the first few, and says nothing changed', () => {
    const text = renderBulk({
      ...base,
      action: 'replay',
      dryRun: true,
      matched: 12,
      done: 0,
      sample: [{ id: 'j1', task: 'charge', queue: 'urgent', what: 'exhausted', at: 0 }],
    });
    expect(text.split('\n')).toEqual([
      'dry run: replay would act on 12 archived message(s) (nothing changed)',
      'the first 1:',
      '  j1  charge  urgent  exhausted  1970-01-01T00:00:00.000Z',
    ]);
  });

  it('a run says what it did, what it skipped and why, and that more match past the limit', () => {
    const text = renderBulk({
      ...base,
      action: 'cancel',
      dryRun: false,
      matched: 5,
      capped: true,
      done: 4,
      skipped: [{ id: 'j9', why: 'it is succeeded now' }],
    });
    expect(text.split('\n')).toEqual([
      'cancelled 4 of 5+ job(s) in 2.5 s',
      'skipped j9: it is succeeded now',
      'more match than --limit: run it again for the rest (what was done is no longer selected)',
    ]);
  });
});

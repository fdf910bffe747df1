import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ScheduleListing } from '../../cli/schedules-command';
import { cli } from '../helpers/cli';
import { tempFile } from '../helpers/emulators';
import { EXAMPLE_CONFIG_FILE } from '../helpers/infra';

describe('taskworker schedules', () => {
  it("lists the example's recurring task: where it goes, its local and AWS expressions, its next fire times", async () => {
    const before = Date.now();
    const json = await cli('schedules', '--config', EXAMPLE_CONFIG_FILE, '--json', '--next', '4');
    expect(json.code).toBe(0);
    const [listing] = JSON.parse(json.out) as ScheduleListing[];
    expect(listing).toMatchObject({
      name: 'refresh-index',
      task: 'rebuild-index',
      queue: 'low_priority',
      cron: '*/5 * * * *',
      timezone: 'Europe/Berlin',
      eventBridge: 'cron(0,5,10,15,20,25,30,35,40,45,50,55 * * * ? *)',
    });
    const next = (listing?.next ?? []).map((t) => Date.parse(t));
    expect(next).toHaveLength(4);
    for (const [i, t] of next.entries()) {
      expect(t).toBeGreaterThan(before);
      expect(t % 300_000).toBe(0);
      if (i > 0) expect(t - (next[i - 1] as number)).toBe(300_000);
    }
    const text = await cli('schedules', '--config', EXAMPLE_CONFIG_FILE);
    expect(text.out).toMatch(/refresh-index\s+rebuild-index\s+low_priority\s+\*\/5 \* \* \* \* Europe\/Berlin\s+cron\(/);
  });

  it('says in one line which schedule is wrong', async () => {
    const dir = join(tempFile('schedules-cli'), '..');
    const config = join(dir, `bad-schedules-${process.pid}.config.json`);
    writeFileSync(
      config,
      JSON.stringify({
        app: 'bad',
        tasksDir: join(EXAMPLE_CONFIG_FILE, '..', 'examples', 'tasks'),
        queues: [
          { name: 'low_priority', priority: 1 },
          { name: 'default', priority: 2 },
          { name: 'high_priority', priority: 3 },
        ],
        schedules: [{ name: 'nightly', task: 'rebuild-index', cron: '0 3 * * 8' }],
        // The example tasks include subscribers of orders.placed: their app declares it.
        events: [{ name: 'orders.placed' }],
      }),
    );
    const out = await cli('schedules', '--config', config);
    expect(out.code).not.toBe(0);
    expect(out.err.trim().split('\n')).toHaveLength(1);
    expect(out.err).toMatch(/schedules\[0\]\.cron = "0 3 \* \* 8": expected a valid crontab/);
  });

  it('backfill says in one line what it needs, before it looks for a version', async () => {
    const out = await cli('schedules', 'backfill', 'refresh-index', '--from', '2027-01-01T00:00:00Z', '--config', EXAMPLE_CONFIG_FILE);
    expect(out.code).toBe(2);
    expect(out.err.trim().split('\n')).toHaveLength(1);
    expect(out.err).toMatch(/usage: taskworker schedules backfill NAME --from TIME --to TIME/);
  });
});

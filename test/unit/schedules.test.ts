import { build } from 'esbuild';
import { resolveSchedules } from '../../lib/config/schedule-config';
import { ConfigError } from '../../lib/errors';
import { checkCron, eventBridgeExpression, nextFireTimes } from '../../lib/policy/cron-expressions';
import { scheduledTimeText, tickBody } from '../../lib/policy/recurring-ticks';

const QUEUES = ['urgent', 'routine'];
const one = (input: Record<string, unknown>) =>
  resolveSchedules([{ name: 's', task: 't', ...input }], QUEUES)[0] as NonNullable<ReturnType<typeof resolveSchedules>[0]>;
const FROM = new Date('2026-11-22T12:00:00Z');
/** As at start and synth: the config's own checks, then the crontab's fields (createRegistry runs checkCron). */
const checked = (input: Record<string, unknown>) => {
  const s = one(input);
  checkCron(s, 'schedules[0].cron');
  return s;
};

describe('schedules in the config', () => {
  it('renders a crontab in EventBridge Scheduler form: days of the week by name, "?" for the other day field', () => {
    expect(eventBridgeExpression(one({ cron: '0 6 * * 1-5' }))).toBe('cron(0 6 ? * MON,TUE,WED,THU,FRI *)');
    expect(eventBridgeExpression(one({ cron: '0 0 * * 0' }))).toBe('cron(0 0 ? * SUN *)');
    expect(eventBridgeExpression(one({ cron: '0 0 * * 7' }))).toBe('cron(0 0 ? * SUN *)');
    expect(eventBridgeExpression(one({ cron: '30 2 1 * *' }))).toBe('cron(30 2 1 * ? *)');
    expect(eventBridgeExpression(one({ cron: '*/20 * * * *' }))).toBe('cron(0,20,40 * * * ? *)');
    expect(eventBridgeExpression(one({ cron: '* * * * *' }))).toBe('cron(* * * * ? *)');
    expect(eventBridgeExpression(one({ rate: '1 minute' }))).toBe('rate(1 minute)');
    expect(eventBridgeExpression(one({ rate: '2 hours' }))).toBe('rate(2 hours)');
  });

  it('gives the next fire times in the schedule’s time zone, daylight saving included', () => {
    const berlin = one({ cron: '0 9 * * *', timezone: 'Europe/Berlin' });
    expect(nextFireTimes(berlin, FROM, 2).map((d) => d.toISOString())).toEqual(['2026-11-23T08:00:00.000Z', '2026-11-24T08:00:00.000Z']);
    const summer = nextFireTimes(berlin, new Date('2027-07-01T12:00:00Z'), 1)[0];
    expect(summer?.toISOString()).toBe('2027-07-02T07:00:00.000Z');
    // A rate counts from when the schedule started.
    const rate = one({ rate: '5 minutes' });
    expect(nextFireTimes(rate, new Date(FROM.getTime() + 7 * 60_000), 2, FROM).map((d) => d.toISOString())).toEqual([
      '2026-11-22T12:10:00.000Z',
      '2026-11-22T12:15:00.000Z',
    ]);
  });

  it("reads overlap and catchUp: catch-up in seconds (none by default), overlap left to the queue's tracking when not given", () => {
    expect(one({ cron: '0 * * * *' })).toMatchObject({ catchUpSeconds: 0 });
    expect(one({ cron: '0 * * * *' }).overlap).toBeUndefined();
    expect(one({ cron: '0 * * * *', overlap: 'buffer-one', catchUp: '1h' })).toMatchObject({ overlap: 'buffer-one', catchUpSeconds: 3600 });
    expect(one({ cron: '0 * * * *', catchUp: 900 })).toMatchObject({ catchUpSeconds: 900 });
  });

  // EventBridge Scheduler's documented rules: "When the time shifts forward in Spring, your schedule
  // invocation gets skipped if the cron expression falls on a non-existent date and time. When the
  // time shifts back in the Fall, your schedule runs only once and doesn't repeat its invocation."
  it.each([
    ['Europe/Berlin', '30 2 * * *', '2027-03-27T12:00:00Z', ['2027-03-29T00:30:00.000Z', '2027-03-30T00:30:00.000Z']],
    ['America/New_York', '30 2 * * *', '2027-03-13T12:00:00Z', ['2027-03-15T06:30:00.000Z', '2027-03-16T06:30:00.000Z']],
    ['Europe/Berlin', '30 2 * * *', '2027-10-30T12:00:00Z', ['2027-10-31T00:30:00.000Z', '2027-11-01T01:30:00.000Z']],
    [
      'Europe/Berlin',
      '0 * * * *',
      '2027-10-30T23:30:00Z',
      ['2027-10-31T00:00:00.000Z', '2027-10-31T02:00:00.000Z', '2027-10-31T03:00:00.000Z'],
    ],
    [
      'America/New_York',
      '*/30 1 * * *',
      '2027-11-07T04:00:00Z',
      ['2027-11-07T05:00:00.000Z', '2027-11-07T05:30:00.000Z', '2027-11-08T06:00:00.000Z'],
    ],
    [
      'Europe/Berlin',
      '*/30 * * * *',
      '2027-03-28T00:20:00Z',
      ['2027-03-28T00:30:00.000Z', '2027-03-28T01:00:00.000Z', '2027-03-28T01:30:00.000Z'],
    ],
  ])(
    'in %s, %s after %s fires as EventBridge Scheduler does across daylight saving: a skipped wall time not at all, a repeated one once',
    (timezone, cron, from, expected) => {
      const s = one({ cron, timezone });
      expect(nextFireTimes(s, new Date(from), expected.length).map((d) => d.toISOString())).toEqual(expected);
    },
  );

  it('derives the job id of a tick from the schedule and its time, as EventBridge Scheduler writes the time', () => {
    const s = one({ cron: '0 * * * *', payload: { shard: 2 } });
    const time = scheduledTimeText(new Date('2026-11-22T13:00:00.250Z'));
    expect(time).toBe('2026-11-22T13:00:00Z');
    expect(JSON.parse(tickBody(s, time))).toEqual({
      v: 1,
      task: 't',
      payload: { shard: 2 },
      id: 'schedule:s:2026-11-22T13:00:00Z',
      appData: { schedule: 's', scheduledTime: '2026-11-22T13:00:00Z' },
    });
  });

  it.each([
    [{ cron: '61 * * * *' }, /schedules\[0\]\.cron = "61 \* \* \* \*": expected a valid crontab/],
    [{ cron: '* * *' }, /schedules\[0\]\.cron = "\* \* \*": expected five fields/],
    [{ cron: '0 0 0 0 0 0' }, /schedules\[0\]\.cron .*expected five fields/],
    [{ cron: '0 0 1 * 1' }, /not both/],
    [{ cron: 5 }, /schedules\[0\]\.cron = 5: expected a five-field crontab/],
    [{ rate: '5 weeks' }, /schedules\[0\]\.rate = "5 weeks"/],
    [{ rate: '0 minutes' }, /schedules\[0\]\.rate = "0 minutes"/],
    [{}, /schedules\[0\] = .*exactly one of cron or rate/],
    [{ cron: '0 * * * *', rate: '1 hour' }, /exactly one of cron or rate/],
    [{ cron: '0 * * * *', timezone: 'Mars/Olympus' }, /schedules\[0\]\.timezone = "Mars\/Olympus"/],
    [{ cron: '0 * * * *', queue: 'bulk' }, /schedules\[0\]\.queue = "bulk": expected one of the configured queues \(urgent, routine\)/],
    [{ cron: '0 * * * *', name: 'has space' }, /schedules\[0\]\.name = "has space"/],
    [{ cron: '0 * * * *', task: '' }, /schedules\[0\]\.task = ""/],
    [{ cron: '0 * * * *', overlap: 'queue' }, /schedules\[0\]\.overlap = "queue": expected 'skip', 'buffer-one', 'allow'/],
    [{ cron: '0 * * * *', catchUp: '8d' }, /schedules\[0\]\.catchUp = "8d": expected a span up to 7 days/],
    [{ cron: '0 * * * *', catchUp: 'soon' }, /schedules\[0\]\.catchUp = "soon"/],
    [{ cron: '0 * * * *', catchUp: -60 }, /schedules\[0\]\.catchUp = -60/],
  ])('refuses %j naming the field and the value', (input, message) => {
    expect(() => checked(input)).toThrow(ConfigError);
    expect(() => checked(input)).toThrow(message);
  });

  it.each([
    ['a publisher', 'lib/index.ts'],
    ['every pool thread (the tasks bundle)', 'lib/runtime.ts'],
  ])('leaves the crontab parser out of what %s loads', async (_who, entry) => {
    const out = await build({
      entryPoints: [entry],
      bundle: true,
      platform: 'node',
      packages: 'external',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const imported = Object.values(out.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));
    expect(imported).not.toContain('cron-parser');
    expect(imported.length).toBeGreaterThan(0);
  });

  it('takes a resolved config as input again (the runtime resolves what the CLI resolved)', () => {
    const once = resolveSchedules(
      [
        { name: 'a', task: 't', rate: '2 hours' },
        { name: 'b', task: 't', cron: '0 6 * * 1-5', timezone: 'Europe/Berlin', queue: 'urgent', payload: { x: 1 } },
      ],
      QUEUES,
    );
    expect(resolveSchedules(once, QUEUES)).toEqual(once);
    expect(() => resolveSchedules([{ name: 'a', task: 't', rate: { value: 0, unit: 'minute' } }], QUEUES)).toThrow(/schedules\[0\]\.rate/);
  });

  it('refuses two schedules of one name, and anything but an array', () => {
    expect(() =>
      resolveSchedules(
        [
          { name: 'a', task: 't', rate: '1 hour' },
          { name: 'a', task: 't', rate: '2 hours' },
        ],
        QUEUES,
      ),
    ).toThrow(/schedules\[1\]\.name = "a": expected a name not used by another schedule/);
    expect(() => resolveSchedules({}, QUEUES)).toThrow(/schedules = \{\}: expected an array/);
    expect(resolveSchedules(undefined, QUEUES)).toEqual([]);
  });
});

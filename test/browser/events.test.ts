/**
 * The dashboard's events in Chromium, against `taskworker dev`'s stack with the example app (its
 * config declares orders.placed; send-order-confirmation and award-loyalty-points subscribe, each
 * on its own queue): one emit, both subscribers' jobs succeed, the events page (from the nav)
 * shows both with today's counts as the stats table has them and links each to its task page, and
 * a subscriber's job page names its event as the jobs table keeps it.
 * TASKWORKER_SCREENSHOTS=DIR writes the two pages' screenshots there.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { localStackUi, type RunningUi, serveUi } from '../../dashboard/server/serve';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { taskStatsKey, utcDay } from '../../lib/policy/stat-sums';
import { EXAMPLE_CONFIG_FILE } from '../helpers/infra';
import { eventually } from '../helpers/run';
import { CHROMIUM, describeWithTools } from '../helpers/tools';

const SUBSCRIBERS = [
  { task: 'award-loyalty-points', queue: 'low_priority' },
  { task: 'send-order-confirmation', queue: 'high_priority' },
];

let stack: LocalStack;
let ui: RunningUi;
let browser: Browser;
let page: Page;
let scratch: string;
const pageErrors: string[] = [];

async function shoot(name: string): Promise<void> {
  const dir = process.env.TASKWORKER_SCREENSHOTS;
  if (dir) await page.screenshot({ path: join(resolve(dir), `${name}.png`), fullPage: true });
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'taskworker-ui-events-'));
  const assetsDir = join(scratch, 'assets');
  await (require('../../scripts/ui-page.cjs') as { buildUiPage: (dir: string) => Promise<void> }).buildUiPage(assetsDir);
  stack = await startLocalStack({
    configFile: EXAMPLE_CONFIG_FILE,
    version: 'ui-events',
    schedules: false,
    logLevel: 'ERROR',
    onOutput: () => {},
  });
  ui = await serveUi({ ...(await localStackUi(stack)), assetsDir, port: 0, readOnly: false, log: () => {} });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await ui?.close();
  await stack?.stop();
  rmSync(scratch, { recursive: true, force: true });
}, 60_000);

describeWithTools('events page (Chromium)', 'chromium')(
  'the dashboard shows events (issue 24), in Chromium against taskworker dev with the example app',
  () => {
    it('one emit: the events page lists both subscribers with today’s counts; a subscriber’s job page names its event', async () => {
      const emitted = await stack.publisher.emit('orders.placed', { order: 'o-1', email: 'a@example.com', cents: 4250 }, { id: 'ui-1' });
      expect(emitted.eventId).toBe('ui-1');
      const jobIds = SUBSCRIBERS.map((s) => `ui-1/${s.task}`);
      await eventually(
        'both subscribers’ jobs to succeed',
        async () => (await Promise.all(jobIds.map((id) => stack.jobs.get(id)))).every((job) => job?.state === 'succeeded'),
        60_000,
      );
      // The counts the page must show: each subscriber's task day, once the dispatchers flushed it (within 5 s).
      const today = utcDay(Date.now());
      const counted = async (task: string) => (await stack.stats.get(taskStatsKey(task), today))?.counters.succeeded ?? 0;
      await eventually(
        'the stats table to count both',
        async () => (await Promise.all(SUBSCRIBERS.map((s) => counted(s.task)))).every((n) => n === 1),
        30_000,
      );

      await page.goto(ui.url);
      await page.click('header nav a:has-text("Events")');
      const event = page.locator('[data-testid="emitted-event"][data-name="orders.placed"]');
      await event.waitFor();
      expect(await event.locator('h3').textContent()).toBe('orders.placed emitted here');
      expect(await event.textContent()).toContain('A customer placed an order');
      const rows = event.locator('tr[data-subscriber]');
      // The page refreshes every 10 s: wait for it to show what the stats table says.
      await eventually(
        'the page to show one success for each subscriber',
        async () => (await rows.locator('[data-field="succeeded"]').allTextContents()).join() === '1,1',
        30_000,
      );
      const shown = await rows.evaluateAll((trs) =>
        trs.map((tr) => {
          const cells = (tr as unknown as { querySelectorAll(s: string): ArrayLike<{ textContent: string | null }> }).querySelectorAll(
            'td',
          );
          return Array.from(cells, (c) => c.textContent);
        }),
      );
      expect(shown).toEqual(SUBSCRIBERS.map((s) => [s.task, s.queue, '1', '0', '0']));
      await shoot('events');

      // Each subscriber links to its task page.
      await rows.locator('a', { hasText: 'send-order-confirmation' }).click();
      await eventually('the task page', async () => (await page.locator('main h2').textContent()) === 'Task send-order-confirmation');

      // A subscriber's job page names the event it ran for, as the jobs table keeps it.
      const job = await stack.jobs.get('ui-1/send-order-confirmation');
      const ref = job?.event;
      expect(ref).toMatchObject({ id: 'ui-1', name: 'orders.placed', source: 'taskworker' });
      await page.goto(`${ui.url}#/job/${encodeURIComponent('ui-1/send-order-confirmation')}`);
      const shownEvent = page.locator('[data-testid="event"]');
      await shownEvent.waitFor();
      expect(await page.locator('[data-testid="job-id"]').textContent()).toBe('ui-1/send-order-confirmation');
      const at = new Date(ref?.emittedAt ?? 0).toISOString().replace('T', ' ').replace('Z', ' UTC');
      expect(await shownEvent.textContent()).toBe(`orders.placed ui-1 from taskworker, emitted ${at}`);
      await shoot('event-job');
      // Its name leads back to the events page.
      await shownEvent.locator('a[data-field="event-name"]').click();
      await page.locator('[data-testid="emitted-event"]').first().waitFor();
      expect(pageErrors).toEqual([]);
    }, 120_000);
  },
);

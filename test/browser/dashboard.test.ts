/**
 * The dashboard in a real browser: Chromium (Debian's `chromium`, driven by playwright-core)
 * against `taskworker ui`'s server over a running local stack (emulators, dispatcher processes,
 * the fixture app in test/fixtures/dashboard). What the page shows is checked against the tables
 * and queues. TASKWORKER_SCREENSHOTS=docs/screenshots writes docs/dashboard.md's screenshots.
 */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { PAGE_META, TOKEN_HEADER } from '../../dashboard/api-types';
import { exactDuration } from '../../dashboard/page/format';
import { localStackUi, type RunningUi, serveUi } from '../../dashboard/server/serve';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { listArchived } from '../../lib/operate/archive';
import { countJobStates } from '../../lib/operate/job-counts';
import type { OperatorContext } from '../../lib/operate/operator-context';
import { throughput } from '../../lib/operate/version-status';
import { mean, utcDay } from '../../lib/policy/stat-sums';
import { CHROMIUM, describeWithTools } from '../helpers/tools';

const CONFIG = resolve(__dirname, '../fixtures/dashboard/taskworker.config.ts');
const XSS = '<img src=x onerror=alert(1)>';

let stack: LocalStack;
let ctx: OperatorContext;
let ui: RunningUi;
let readOnlyUi: RunningUi;
let browser: Browser;
let page: Page;
let scratch: string;
let shots: string;
let devLog: string;
const dialogs: string[] = [];
const pageErrors: string[] = [];

async function until<T>(probe: () => Promise<T | undefined | false>, what: string, timeoutMs = 45_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The little of the DOM the page function below touches (this project compiles without the DOM
 * library). Waiting is done by polling locators: the page's CSP forbids the eval that Playwright's
 * waitForFunction relies on.
 */
type InPage = {
  document: { querySelector(selector: string): { textContent: string | null; getAttribute(name: string): string | null } | null };
};
const jobState = async (id: string) => (await ctx.jobs.get(id))?.state;

async function shoot(name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'taskworker-ui-'));
  shots = process.env.TASKWORKER_SCREENSHOTS ? resolve(process.env.TASKWORKER_SCREENSHOTS) : join(scratch, 'shots');
  mkdirSync(shots, { recursive: true });
  const assetsDir = join(scratch, 'assets');
  devLog = join(scratch, 'dev.log');
  await (require('../../scripts/ui-page.cjs') as { buildUiPage: (dir: string) => Promise<void> }).buildUiPage(assetsDir);
  stack = await startLocalStack({
    configFile: CONFIG,
    version: 'ui',
    dispatchers: 2,
    invocationSeconds: 8,
    logLevel: 'ERROR',
    // Every line the dispatchers write, as `taskworker dev` keeps them in its log file: the job pages read their lines there.
    onOutput: (line) => appendFileSync(devLog, `${line}\n`),
  });
  const common = { ...(await localStackUi(stack, { logFile: devLog })), assetsDir, port: 0, log: () => {} };
  ctx = await common.contextFor(stack.version);
  ui = await serveUi({ ...common, readOnly: false });
  readOnlyUi = await serveUi({ ...common, readOnly: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await ui?.close();
  await readOnlyUi?.close();
  await stack?.stop();
  rmSync(scratch, { recursive: true, force: true });
}, 60_000);

describeWithTools('dashboard (Chromium)', 'chromium')('taskworker ui in Chromium, against a running local stack', () => {
  it('the overview lists every queue and its counts follow the work as it runs', async () => {
    await page.goto(ui.url);
    await page.locator('tr[data-queue="fast"]').waitFor();
    expect(await page.locator('tr[data-queue]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-queue')))).toEqual([
      'fast',
      'slow',
    ]);
    const succeeded = page.locator('tr[data-queue="fast"] [data-field="succeeded"]');
    const before = Number(await succeeded.textContent());
    // A mixed workload: greetings on the fast queue, emails beside them, and a ledger that is down.
    await stack.publisher.publishBatch([
      ...Array.from({ length: 30 }, (_, i) => ({ task: 'greet', payload: { name: `n${i}` } })),
      ...Array.from({ length: 3 }, (_, i) => ({ task: 'send-email', payload: { to: `u${i}@example.com` } })),
      ...Array.from({ length: 4 }, (_, i) => ({ task: 'ledger', payload: { flag: join(scratch, 'never'), note: `entry ${i}` } })),
    ]);
    // The page refreshes itself (no reload) until it shows what the stats table says.
    const today = utcDay(Date.now());
    const counted = await until(async () => {
      const n = (await ctx.stats.get('fast', today))?.counters.succeeded ?? 0;
      return n >= before + 33 ? n : undefined;
    }, 'the stats table to count 33 more successes');
    await until(async () => (await succeeded.textContent()) === String(counted), `the page to show ${counted} successes`, 20_000);
    const archived = await until(async () => {
      const day = await ctx.stats.get('slow', today);
      return (day?.archived.exhausted ?? 0) >= 4 ? day?.archived.exhausted : undefined;
    }, 'the ledger entries to be archived');
    const archivedCell = page.locator('tr[data-queue="slow"] [data-field="archived"]');
    await until(async () => (await archivedCell.textContent()) === String(archived), `the page to show ${archived} archived`, 20_000);
    expect(Number(await page.locator('[data-testid="dispatchers-alive"]').textContent())).toBe(stack.alive());
    await shoot('overview');
  });

  it("the overview charts jobs per minute from the stats table's minute counters; a task page shows what the task cost", async () => {
    await stack.publisher.publishBatch(Array.from({ length: 12 }, (_, i) => ({ task: 'greet', payload: { name: `m${i}` } })));
    // What the chart is drawn from: the dispatchers' coalesced minute counters, read by the operator.
    await until(async () => {
      const t = await throughput(ctx, 60);
      const fast = t.queues.fast ?? [];
      return fast.reduce((n, c) => n + c.succeeded, 0) >= 12 && fast.reduce((n, c) => n + c.started, 0) >= 12;
    }, 'the minute counters to count 12 greetings');
    await page.goto(ui.url);
    const panel = page.locator('[data-testid="throughput"]');
    await panel.locator('canvas').waitFor();
    expect(await panel.textContent()).toContain("the stats table's minute counters");
    // Drawn: the canvas holds painted pixels (axes, legend and the lines of the data).
    const painted = await panel.locator('canvas').evaluate((c) => {
      const canvas = c as unknown as {
        width: number;
        height: number;
        getContext(t: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } };
      };
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
      let n = 0;
      for (let i = 3; i < data.length; i += 4) if ((data[i] ?? 0) > 0) n += 1;
      return n;
    });
    expect(painted).toBeGreaterThan(1000);
    await shoot('throughput');
    await page.goto(`${ui.url}#/queue/task:greet`);
    const cost = page.locator('table.cost');
    await cost.waitFor();
    expect(await cost.textContent()).toMatch(/total/);
    await shoot('task-cost');
  });

  it("a batch task's page counts its calls and the jobs they ran, as the stats table has them", async () => {
    const published = await stack.publisher.publishBatch(Array.from({ length: 30 }, (_, n) => ({ task: 'tally', payload: { n } })));
    await until(async () => {
      const states = await Promise.all(published.map((p) => jobState(p.jobId)));
      return states.every((s) => s === 'succeeded');
    }, 'the 30 tally jobs to succeed');
    const day = await until(async () => {
      const stats = await ctx.stats.get('task:tally', new Date().toISOString().slice(0, 10));
      return (stats?.counters.batched ?? 0) >= 30 ? stats : undefined;
    }, "the stats to count the tally jobs' calls");
    const calls = day.counters.batches ?? 0;
    // Two dispatchers of four slots, calls of up to 50 waiting 1.5 s: far fewer calls than jobs.
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(calls).toBeLessThanOrEqual(10);
    await page.goto(`${ui.url}#/queue/task:tally`);
    const line = page.locator('p.batch-calls');
    await line.waitFor();
    expect(await line.textContent()).toContain(`Batch calls: ${calls}, running 30 jobs — ${(30 / calls).toFixed(1)} a call on average.`);
  });

  it("a job's page lists its kept steps in order: name, the attempt that kept it, the result, as the jobs table has them", async () => {
    const { jobId } = await stack.publisher.publish('checkout', { order: 'o-9' });
    await until(async () => (await jobState(jobId)) === 'succeeded', 'the checkout job to succeed');
    const record = await ctx.jobs.get(jobId);
    const kept = record?.steps ?? [];
    expect(kept.map((s) => [s.name, s.result])).toEqual([
      ['charge', '{"id":"ch-o-9"}'],
      ['reserve', '3'],
      ['receipt', '"receipt for ch-o-9"'],
    ]);
    await page.goto(`${ui.url}#/job/${encodeURIComponent(jobId)}`);
    const steps = page.locator('[data-testid="steps"] tbody tr');
    await steps.first().waitFor();
    const rows = (await steps.allTextContents()).map((t) => t.replace(/\s+/g, ' ').trim());
    // The attempt that kept each step is the table's, not assumed: on a busy machine a first claim can
    // be handed back before it runs, and the second attempt keeps them all.
    const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    expect(rows).toEqual(
      kept.map((s, n) =>
        expect.stringMatching(new RegExp(`^${n + 1}${s.name}${s.attempt}\\d{4}-\\d\\d-\\d\\d .*${literal(s.result ?? '')}$`)),
      ),
    );
  });

  it("completes a job's token from its page after a confirm: the job resumes with the value; a second completion is refused", async () => {
    const { jobId } = await stack.publisher.publish('approve', { order: 'o-4' });
    await until(async () => (await jobState(jobId)) === 'waiting-token', 'the approve job to wait for its token');
    const token = (await ctx.jobs.get(jobId))?.waitToken as string;
    await page.goto(`${ui.url}#/job/${encodeURIComponent(jobId)}`);
    const form = page.locator('[data-testid="token-form"]');
    await form.waitFor();
    expect((await page.locator('[data-testid="steps"] [data-field="wait"]').nth(1).textContent()) ?? '').toMatch(
      /^waits for its token until /,
    );
    await form.locator('input[name="value"]').fill('{"approved": true}');
    await form.locator('button[type="submit"]').click();
    expect(await page.locator('[role="dialog"]').textContent()).toContain(`Complete token ${token} with {"approved":true}?`);
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await until(
      async () => (await page.locator('[data-testid="action-outcome"]').textContent()) === 'completed: the job resumes now',
      'the token outcome',
    );
    await until(async () => (await jobState(jobId)) === 'succeeded', 'the approve job to resume and succeed');
    expect((await ctx.jobs.get(jobId))?.result).toBe(JSON.stringify('o-4 approved'));
    // The page's own token (as its POSTs send it): the server refuses the second completion, naming the first.
    const again = await page.evaluate(
      async ([version, t, header, meta]) => {
        const pageToken = (globalThis as unknown as InPage).document.querySelector(`meta[name="${meta}"]`)?.getAttribute('content') ?? '';
        const body = JSON.stringify({ version, token: t, value: 1 });
        const r = await fetch('/api/token/complete', {
          method: 'POST',
          headers: { 'content-type': 'application/json', [header]: pageToken },
          body,
        });
        return r.json();
      },
      [stack.version, token, TOKEN_HEADER, PAGE_META.token] as const,
    );
    expect(again).toMatchObject({ outcome: 'completed-already', jobId, value: JSON.stringify({ approved: true }) });
    await until(
      async () =>
        ((await page.locator('[data-testid="steps"] [data-field="wait"]').nth(1).textContent()) ?? '').startsWith('token completed'),
      'the steps table to say the token was completed',
    );
  });

  it('opens a job by id: its state, result, expiry and history from the jobs table', async () => {
    const expiresAt = new Date(Date.now() + 3_600_000);
    await stack.publisher.publish('greet', { name: 'Ada' }, { id: 'hello-ui', expiresAt });
    await until(async () => (await jobState('hello-ui')) === 'succeeded', 'hello-ui to succeed');
    await page.goto(`${ui.url}#/jobs?state=succeeded`);
    await page.fill('input[name="job-id"]', 'hello-ui');
    await page.click('button[type="submit"]');
    await page.locator('[data-testid="result"]').waitFor();
    expect(await page.locator('[data-testid="job-id"]').textContent()).toBe('hello-ui');
    expect(await page.locator('h2 .badge').textContent()).toBe('succeeded');
    expect(JSON.parse((await page.locator('[data-testid="result"]').textContent()) ?? '')).toEqual({ hello: 'Ada' });
    expect(await page.locator('ol.timeline li').count()).toBe((await ctx.jobs.get('hello-ui'))?.history.length);
    const expiry = page.locator('dt', { hasText: 'expires' }).locator('xpath=following-sibling::dd[1]');
    expect(await expiry.textContent()).toBe(expiresAt.toISOString().replace('T', ' ').replace('Z', ' UTC'));
    await shoot('job');
  });

  it('renders a hostile payload and error as text, never as HTML', async () => {
    const flag = join(scratch, 'ledger-is-up');
    await stack.publisher.publish('ledger', { flag, note: XSS }, { id: 'xss-1' });
    await until(async () => (await jobState('xss-1')) === 'archived', 'xss-1 to be archived');
    await page.goto(`${ui.url}#/archive`);
    const row = page.locator('tr', { has: page.locator('a', { hasText: 'xss-1' }) });
    await row.waitFor();
    expect(await row.locator('td.detail').textContent()).toBe(`Error: ledger is down; could not post ${XSS}`);
    await page.goto(`${ui.url}#/job/xss-1`);
    await page.locator('[data-testid="payload"]').waitFor();
    expect(JSON.parse((await page.locator('[data-testid="payload"]').textContent()) ?? '')).toEqual({ flag, note: XSS });
    expect(await page.locator('[data-testid="error"]').textContent()).toContain(XSS);
    expect(await page.locator('main img').count()).toBe(0);
    expect(dialogs).toEqual([]);
  });

  it('replays an archived message once the fault is fixed, and the job succeeds', async () => {
    writeFileSync(join(scratch, 'ledger-is-up'), 'yes');
    await page.goto(`${ui.url}#/archive?reason=exhausted`);
    const row = page.locator('tr', { has: page.locator('a', { hasText: 'xss-1' }) });
    await row.waitFor();
    await shoot('archive');
    await row.locator('input[type="checkbox"]').check();
    await page.click('button:has-text("Replay selected (1)")');
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await page.locator('[data-testid="action-outcome"]').waitFor();
    expect(await page.locator('[data-testid="action-outcome"]').textContent()).toContain('replayed 1 message(s)');
    await until(async () => (await jobState('xss-1')) === 'succeeded', 'the replayed job to succeed');
    expect((await ctx.jobs.get('xss-1'))?.result).toBe(JSON.stringify({ posted: XSS }));
    await page.goto(`${ui.url}#/job/xss-1`);
    await until(async () => (await page.locator('h2 .badge').textContent()) === 'succeeded', 'the job page to say succeeded');
  });

  it('deletes every archived message a filter matches after a confirm that names the count, and logs it', async () => {
    const flag = join(scratch, 'never-up');
    const ids = ['bulk-1', 'bulk-2', 'bulk-3'];
    for (const id of ids) await stack.publisher.publish('ledger', { flag, note: id }, { id });
    for (const id of ids) await until(async () => (await jobState(id)) === 'archived', `${id} to be archived`);
    const archivedLedger = (await listArchived(ctx, { task: 'ledger', reason: 'exhausted' }, 100)).length;
    await page.goto(`${ui.url}#/archive?reason=exhausted&task=ledger`);
    await page.locator('tr', { has: page.locator('a', { hasText: 'bulk-3' }) }).waitFor();
    await page.click('button:has-text("Delete all matching…")');
    const question = (await page.locator('[role="dialog"] p').textContent()) ?? '';
    expect(question).toContain(
      `Delete ${archivedLedger} archived message(s) from the archive (their job records stay), matching reason exhausted, task ledger?`,
    );
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await page.locator('[data-testid="action-outcome"]').waitFor();
    expect(await page.locator('[data-testid="action-outcome"]').textContent()).toBe(
      `deleted from the archive ${archivedLedger} of ${archivedLedger}`,
    );
    expect(await listArchived(ctx, { task: 'ledger', reason: 'exhausted' }, 100)).toEqual([]);
    for (const id of ids) expect(await jobState(id)).toBe('archived');
    await page.reload();
    await page.locator('[data-testid="bulk-log"] summary').click();
    expect(await page.locator('[data-testid="bulk-log"] li').last().textContent()).toContain(
      `bulk delete {"reason":"exhausted","task":"ledger"} — ${archivedLedger} of ${archivedLedger} done`,
    );
  });

  it('replays exactly the 30 archived messages a filter matches, after a confirm that names the count, and each job then succeeds', async () => {
    const flag = join(scratch, 'ledger-up');
    const ids = Array.from({ length: 30 }, (_, i) => `replay-${i}`);
    await stack.publisher.publishBatch(ids.map((id) => ({ task: 'ledger', payload: { flag, note: id }, options: { id } })));
    for (const id of ids) await until(async () => (await jobState(id)) === 'archived', `${id} to be archived`);
    expect((await listArchived(ctx, { task: 'ledger', reason: 'exhausted' }, 100)).map((m) => m.record?.jobId).sort()).toEqual(
      [...ids].sort(),
    );
    writeFileSync(flag, 'up'); // the fault is fixed
    await page.goto(`${ui.url}#/archive?reason=exhausted&task=ledger`);
    // The page may be at this very address already (the test before ends there): read the archive afresh.
    await page.reload();
    await page.locator('tr', { has: page.locator('a', { hasText: 'replay-29' }) }).waitFor();
    await page.click('button:has-text("Replay all matching…")');
    expect(await page.locator('[role="dialog"] p').textContent()).toContain(
      'Replay 30 archived message(s) to their queues, attempts reset',
    );
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await page.locator('[data-testid="action-outcome"]').waitFor();
    expect(await page.locator('[data-testid="action-outcome"]').textContent()).toBe('replayed 30 of 30');
    // The durable truth: every one of the 30 ran again and succeeded, once; none is left in the archive.
    for (const id of ids) await until(async () => (await jobState(id)) === 'succeeded', `${id} to succeed after its replay`);
    for (const id of ids) expect((await ctx.jobs.get(id))?.result).toBe(JSON.stringify({ posted: id }));
    expect(await listArchived(ctx, { task: 'ledger', reason: 'exhausted' }, 100)).toEqual([]);
  });

  it("the publish form refuses a payload the task's validate refuses, and publishes a good one", async () => {
    await page.goto(`${ui.url}#/publish`);
    await page.selectOption('select[name="task"]', 'send-email');
    await page.fill('textarea[name="payload"]', '{"to": "nobody"}');
    await page.click('button:has-text("Publish…")');
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await page.locator('[data-testid="action-outcome"]').waitFor();
    expect(await page.locator('[data-testid="action-outcome"]').textContent()).toBe(
      `payload refused by send-email's validate: to must be an email address, got "nobody"`,
    );
    await page.fill('textarea[name="payload"]', '{"to": "ada@example.com"}');
    await page.click('button:has-text("Publish…")');
    await page.click('[role="dialog"] button:has-text("Confirm")');
    const text = await until(async () => {
      const shown = (await page.locator('[data-testid="action-outcome"]').textContent()) ?? '';
      return shown.startsWith('published job ') ? shown : undefined;
    }, 'the publish outcome');
    const jobId = text.split(' ')[2] as string;
    await until(async () => (await jobState(jobId)) === 'succeeded', 'the published job to succeed');
    expect((await ctx.jobs.get(jobId))?.result).toBe(JSON.stringify({ sentTo: 'ada@example.com' }));
    await shoot('publish');
  });

  it('the queue page draws its histograms and trends with the charting library', async () => {
    await page.goto(`${ui.url}#/queue/fast`);
    await page.locator('canvas').first().waitFor();
    expect(await page.locator('canvas').count()).toBe(4);
    const drawn = await page
      .locator('canvas')
      .first()
      .evaluate((c) => (c as unknown as { width: number }).width > 0);
    expect(drawn).toBe(true);
    await shoot('queue');
  });

  it("a job page links what it waits for and what waits for it, with their states; the flow view counts the flow; cancel takes the flow's waiting jobs", async () => {
    await stack.publisher.publish('greet', { name: 'later' }, { id: 'ui-root', delaySeconds: 3600 });
    await until(async () => (await jobState('ui-root')) === 'scheduled', 'ui-root to be parked');
    await stack.publisher.publish('greet', { name: 'after' }, { id: 'ui-dep', dependsOn: ['ui-root'], tags: ['ui-flow'] });
    await until(async () => (await ctx.jobs.get('ui-root'))?.dependents?.some((e) => e.id === 'ui-dep'), 'ui-dep to register on ui-root');
    await page.goto(`${ui.url}#/job/ui-root`);
    const dependent = page.locator('[data-testid="dependents"] li[data-job="ui-dep"]');
    await dependent.waitFor();
    expect(await dependent.locator('.badge').textContent()).toBe((await jobState('ui-dep')) as string);
    await dependent.locator('a').click();
    await until(async () => (await page.locator('[data-testid="job-id"]').textContent()) === 'ui-dep', 'the link to open ui-dep');
    const dependency = page.locator('[data-testid="dependencies"] li[data-job="ui-root"]');
    await dependency.waitFor();
    expect(await dependency.locator('.badge').textContent()).toBe('scheduled');
    expect(await page.locator('[data-testid="tags"] a').allTextContents()).toEqual(['ui-flow']);
    await page.click('[data-testid="flow-link"]');
    await page.locator('[data-testid="flow"] tr[data-job="ui-root"]').waitFor();
    expect(await page.locator('[data-testid="flow-progress"] [data-group="waiting"]').textContent()).toContain('2 waiting');
    expect(
      (await page.locator('[data-testid="flow"] tr[data-job]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-job')))).sort(),
    ).toEqual(['ui-dep', 'ui-root']);
    // Drawn: both jobs as nodes, one link from what is waited for to what waits.
    const graph = page.locator('[data-testid="flow-graph"]');
    expect(await graph.getAttribute('data-folded')).toBe('no');
    expect((await graph.locator('[data-node]').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-node')))).sort()).toEqual([
      'ui-dep',
      'ui-root',
    ]);
    expect(await graph.locator('polyline.edge').count()).toBe(1);
    await shoot('flow');
    await page.goto(`${ui.url}#/job/ui-root`);
    await page.click('button:has-text("Cancel with its dependents")');
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await page.locator('[data-testid="action-outcome"]').waitFor();
    expect(await page.locator('[data-testid="action-outcome"]').textContent()).toBe('cancelled 2 job(s)');
    expect([await jobState('ui-root'), await jobState('ui-dep')]).toEqual(['cancelled', 'cancelled']);
    await until(async () => (await page.locator('h2 .badge').textContent()) === 'cancelled', 'the job page to say cancelled');
  });

  it('draws a chord of 200 as a graph: the callback as its own node, the members folded into counts by state; a node opens its job', async () => {
    const members = Array.from({ length: 200 }, (_, i) => ({ task: 'greet', payload: { name: `m${i}` } }));
    const { callback } = await stack.publisher.chord(members, { task: 'greet', payload: { name: 'all' }, options: { id: 'ui-chord' } });
    await page.goto(`${ui.url}#/flow/${callback.jobId}`);
    const graph = page.locator('[data-testid="flow-graph"][data-folded="yes"]');
    await graph.waitFor();
    await graph.locator(`[data-node="${callback.jobId}"]`).waitFor();
    // The member nodes count the 200 members between them, whatever states they are in as the page
    // reads them: a state only one member is in is drawn as that job's own node (count 1, a link).
    const counts = await graph
      .locator('g.node[data-count]')
      .evaluateAll(
        (nodes, root) => nodes.filter((n) => n.getAttribute('data-node') !== root).map((n) => Number(n.getAttribute('data-count'))),
        callback.jobId,
      );
    expect(counts.reduce((a, n) => a + n, 0)).toBe(200);
    expect(await graph.locator('polyline.edge').count()).toBe(counts.length);
    await shoot('flow-chord');
    await graph.locator(`a:has([data-node="${callback.jobId}"])`).click();
    await until(
      async () => (await page.locator('[data-testid="job-id"]').textContent()) === callback.jobId,
      'the node to open the callback',
    );
  });

  it("a running job's page shows its payload as its first claim kept it, the task's redact fields masked", async () => {
    const card = { number: '4111 1111 1111 1111', expiry: '12/29' };
    await stack.publisher.publish('nap', { ms: 4_500, card }, { id: 'ui-paying' });
    await until(async () => (await jobState('ui-paying')) === 'running', 'the nap to start');
    await page.goto(`${ui.url}#/job/ui-paying`);
    const payload = page.locator('[data-testid="payload"]');
    await payload.waitFor();
    expect(JSON.parse((await payload.textContent()) ?? '')).toEqual({ ms: 4_500, card: { number: '[redacted]', expiry: '12/29' } });
    expect(await page.locator('main').textContent()).not.toContain(card.number);
    // The table holds it masked too: the number never reached it.
    expect((await ctx.jobs.get('ui-paying'))?.payload).toBe('{"ms":4500,"card":{"number":"[redacted]","expiry":"12/29"}}');
  });

  it("a job's page shows its log lines (ctx.log and console) while it runs and after, as dev's log file has them", async () => {
    const flag = join(scratch, 'waiter-flag');
    await stack.publisher.publish('waiter', { flag }, { id: 'ui-logs' });
    await page.goto(`${ui.url}#/job/ui-logs`);
    const lines = page.locator('[data-testid="log-lines"] tr');
    const messages = () => lines.evaluateAll((trs) => trs.map((tr) => tr.querySelector('[data-field="message"]')?.textContent ?? ''));
    // While it waits for the flag (not created yet, so it cannot have ended): the line it wrote first, read again every 2 s.
    // (Its lines, not the previous page's: the page is this job's once its id shows.)
    await until(async () => (await page.locator('[data-testid="job-id"]').textContent()) === 'ui-logs', 'the job page to open');
    const first = await until(async () => {
      const shown = await messages();
      return shown.length > 0 ? shown : undefined;
    }, 'the running job page to show its first line');
    expect(first[0]).toBe(`waiting for the flag {"flag":${JSON.stringify(flag)}}`);
    expect(await lines.first().locator('td').nth(1).textContent()).toBe('attempt 1');
    await shoot('job-logs');
    writeFileSync(flag, 'up');
    await until(async () => (await jobState('ui-logs')) === 'succeeded', 'the waiter to end');
    // The durable truth: once it has ended, the page shows exactly the job's lines dev's log file holds.
    const own = () =>
      readFileSync(devLog, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{') && (JSON.parse(l) as { jobId?: string }).jobId === 'ui-logs')
        .map((l) => (JSON.parse(l) as { message: string }).message);
    await until(async () => (await messages()).length === 2 && own().length === 2, 'its second line on the page');
    expect((await messages())[1]).toBe(own()[1]);
    expect(own()[0]).toBe('waiting for the flag');
  });

  it("the jobs page filters by tag: the tag's jobs in every state, as the tag index has them", async () => {
    await stack.publisher.publish('greet', { name: 'tagged' }, { id: 'ui-tagged', tags: ['ui-flow'] });
    await until(async () => (await jobState('ui-tagged')) === 'succeeded', 'ui-tagged to succeed');
    await page.goto(`${ui.url}#/jobs?state=archived`);
    await page.fill('input[name="tag"]', 'ui-flow');
    await page.click('button[name="filter-tag"]');
    await page.locator('[data-testid="tag-filter"]').waitFor();
    const rows = page.locator('[data-testid="jobs"] tr[data-job]');
    await until(async () => (await rows.count()) === 2, 'two tagged jobs listed');
    const expected = (await ctx.jobs.jobsByTag('ui-flow', 10)).map((j) => [j.jobId, j.state]);
    const shown = await rows.evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-job'), tr.children[3]?.textContent]));
    expect(shown).toEqual(expected);
    expect(new Set(expected.map(([, state]) => state))).toEqual(new Set(['succeeded', 'cancelled']));
    // A tag's jobs are in every state: no state tabs.
    expect(await page.locator('[data-testid="state-tabs"]').count()).toBe(0);
  });

  it('the jobs page has a tab per state with its count, each counted without a scan, and each tab lists its state: queued, running, delayed, succeeded, archived, cancelled', async () => {
    // Queued: slow paused (the dispatchers read the controls every 2 s), two ledger entries published to it.
    await ctx.controls?.change('slow', { paused: true }, Date.now());
    await new Promise((r) => setTimeout(r, 3000));
    const queuedIds = ['ui-queued-1', 'ui-queued-2'];
    try {
      for (const id of queuedIds) await stack.publisher.publish('ledger', { flag: join(scratch, 'never'), note: id }, { id });
      // Delayed: published to run in 10 minutes (a scheduled record from its publish); on slow, whose depth no later test reads.
      await stack.publisher.publish('ledger', { flag: join(scratch, 'never'), note: 'later' }, { id: 'ui-delayed', delaySeconds: 600 });
      // Running: a 4.5 s nap, named by its dispatcher's beat (beats come every 15 s; this one is written for it, as the next would).
      await stack.publisher.publish('nap', { ms: 4_500 }, { id: 'ui-napping' });
      const napping = await until(async () => {
        const r = await ctx.jobs.get('ui-napping');
        return r?.state === 'running' ? r : undefined;
      }, 'the nap to start');
      const now = Date.now();
      await ctx.workers?.beat({
        id: `napper@${now}`,
        workerId: napping.leaseOwner as string,
        role: 'scheduled',
        place: { container: 'local/test' },
        startedAt: now,
        deadline: now + 60_000,
        heardAt: now,
        jobs: ['ui-napping'],
        held: 1,
      });

      // Every row the page ever shows from here on (the last test left it on the tag filter's list:
      // ui-tagged, ui-dep): a hash change keeps the page, and the running tab must never show the
      // last list's rows under its heading while its own load is on the way.
      await page.evaluate(`{
        const shown = (window.rowsShown = new Set());
        new MutationObserver(() => {
          for (const tr of document.querySelectorAll('[data-testid="jobs"] tr[data-job]')) shown.add(tr.getAttribute('data-job') + ' ' + tr.children[3]?.textContent);
        }).observe(document.body, { childList: true, subtree: true, characterData: true, attributes: true });
      }`);
      await page.goto(`${ui.url}#/jobs?state=running`);
      const tabs = page.locator('[data-testid="state-tabs"]');
      const count = (state: string) => tabs.locator(`a[data-state="${state}"] [data-count]`);
      await until(async () => (await count('running').textContent()) === '1', 'the running tab to count the nap');
      const rows = page.locator('[data-testid="jobs"] tr[data-job]');
      await until(async () => (await rows.count()) > 0, 'the running tab to list the nap');
      expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-job')))).toEqual(['ui-napping']);
      expect(await page.evaluate('[...window.rowsShown]')).toEqual(['ui-napping running']);
      expect(await page.locator('[data-testid="from-workers"]').textContent()).toContain('held by the live dispatchers at their last beat');
      await shoot('jobs-tabs');
      await ctx.workers?.end(`napper@${now}`, Date.now());

      // Each tab's count is what the operator counts (read again until the page's 15 s refresh agrees), and each tab lists its state only.
      const countedText = async (state: string) => {
        const c = (await countJobStates(ctx, ['fast', 'slow'])).states.find((x) => x.state === state);
        return `${c?.count}${c?.atLeast ? '+' : ''}${c?.source === 'today' ? ' today' : ''}`;
      };
      const expectTab = async (state: string, ids: string[]) => {
        await tabs.locator(`a[data-state="${state}"]`).click();
        await until(async () => (await tabs.locator('a.current').getAttribute('data-state')) === state, `the ${state} tab to open`);
        await until(async () => (await count(state).textContent()) === (await countedText(state)), `the ${state} tab's count`);
        const shown = await until(
          async () => {
            // Until this tab's list has loaded: the page draws no table while its load is on the way,
            // and an empty wanted list would otherwise pass on no rows at all.
            if ((await page.locator('[data-testid="jobs"]').count()) === 0) return undefined;
            const list = await rows.evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-job'), tr.children[3]?.textContent]));
            // Until the list is this tab's: right after the click the rows may still be the last tab's
            // (a tab that lists nothing would otherwise pass on the previous tab's rows).
            return ids.every((id) => list.some(([job]) => job === id)) && list.every(([, s]) => s === state) ? list : undefined;
          },
          `the ${state} tab to list ${ids.join(', ')}`,
        );
        expect(new Set(shown.map(([, s]) => s))).toEqual(new Set(shown.length > 0 ? [state] : []));
        return shown.length;
      };
      expect(await expectTab('queued', queuedIds)).toBe(2);
      expect(await count('queued').textContent()).toBe('2');
      await expectTab('scheduled', ['ui-delayed']);
      const delayed = page.locator('[data-testid="jobs"] tr[data-job="ui-delayed"]');
      expect(await delayed.locator('td').nth(7).textContent()).toBe(
        new Date((await ctx.jobs.get('ui-delayed'))?.runAt as number).toISOString().replace('T', ' ').replace('Z', ' UTC'),
      );
      expect(await expectTab('archived', [])).toBeGreaterThan(0);
      await expectTab('cancelled', ['ui-root', 'ui-dep']);
      expect(await expectTab('succeeded', [])).toBeGreaterThan(0);
      // Both queues list their succeeded jobs from the index (`listSucceeded`, on by default): no scan, no note.
      expect(await page.locator('[data-testid="scanned"]').count()).toBe(0);
      expect(await tabs.locator('a[data-state="succeeded"]').getAttribute('title')).toContain('stats table');
      expect(await expectTab('waiting', [])).toBe(0);

      // Exact durations beside each job: the nap, once it ended, waited and ran what its record says.
      await until(async () => (await jobState('ui-napping')) === 'succeeded', 'the nap to end');
      const napped = await ctx.jobs.get('ui-napping');
      await page.goto(`${ui.url}#/jobs?state=succeeded&task=nap`);
      const napRow = page.locator('[data-testid="jobs"] tr[data-job="ui-napping"]');
      await napRow.waitFor();
      expect(await napRow.locator('[data-field="ran"]').textContent()).toBe(
        exactDuration((napped?.finishedAt as number) - (napped?.lastStartedAt as number)),
      );
      expect(await napRow.locator('[data-field="waited"]').textContent()).toBe(
        exactDuration((napped?.firstStartedAt as number) - (napped?.publishedAt as number)),
      );
    } finally {
      // Resumed even when a check above failed: a paused slow queue would fail every later test.
      await ctx.controls?.change('slow', { paused: false }, Date.now());
    }
    await until(async () => (await Promise.all(queuedIds.map(jobState))).every((s) => s === 'archived'), 'the queued entries to run');
    await stack.publisher.cancel('ui-delayed');
  });

  it('the succeeded tab lists finished jobs newest first, page after page, from the index', async () => {
    // 50 jobs finished one after another: each published once the one before has succeeded, so the
    // order they finished in is known here, not read back from the store the page reads.
    const ids = Array.from({ length: 50 }, (_, i) => `ui-stamp-${String(i).padStart(2, '0')}`);
    for (const [n, id] of ids.entries()) {
      await stack.publisher.publish('stamp', { n }, { id });
      await until(async () => (await jobState(id)) === 'succeeded', `${id} to succeed`);
    }
    const newestFirst = [...ids].reverse();
    await page.goto(`${ui.url}#/jobs?state=succeeded&task=stamp`);
    const rows = page.locator('[data-testid="jobs"] tr[data-job]');
    const listed = () => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-job')));
    await until(async () => (await listed()).join() === newestFirst.slice(0, 25).join(), 'the first page to list the 25 newest');
    expect(await page.locator('[data-testid="scanned"]').count()).toBe(0);
    await shoot('jobs-succeeded');
    await page.getByRole('button', { name: 'Older' }).click();
    await until(async () => (await listed()).join() === newestFirst.slice(25).join(), 'the second page to list the 25 oldest');
    expect(await page.getByRole('button', { name: 'Older' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Newer' }).click();
    await until(async () => (await listed())[0] === newestFirst[0], 'the first page again');
  });

  it('the job page retries an archived job (its message back to its queue, attempts reset) and prints its error once with its exact wait and run; read-only refuses the retry', async () => {
    const flag = join(scratch, 'retry-flag');
    await stack.publisher.publish('ledger', { flag, note: 'retry me' }, { id: 'ui-retry' });
    await until(async () => (await jobState('ui-retry')) === 'archived', 'ui-retry to be archived');
    await page.goto(`${ui.url}#/job/ui-retry`);
    const error = page.locator('[data-testid="error"]');
    await error.waitFor();
    // The message once: the stack's own head is not printed again.
    const text = (await error.textContent()) ?? '';
    expect(text.split('ledger is down; could not post retry me')).toHaveLength(2);
    expect(text).toMatch(/^Error: ledger is down; could not post retry me\n\s+at /);
    const archived = await ctx.jobs.get('ui-retry');
    expect(await page.locator('[data-testid="ran"]').textContent()).toContain(
      exactDuration((archived?.finishedAt as number) - (archived?.lastStartedAt as number)),
    );
    expect(await page.locator('[data-testid="waited"]').textContent()).toContain(
      exactDuration((archived?.firstStartedAt as number) - (archived?.publishedAt as number)),
    );

    // Read-only: the button is disabled and the server refuses it.
    const ro = await browser.newPage();
    await ro.goto(`${readOnlyUi.url}#/job/ui-retry`);
    const roRetry = ro.locator('button:has-text("Retry")');
    await roRetry.waitFor();
    expect(await roRetry.isDisabled()).toBe(true);
    const refused = await ro.evaluate(async () => {
      const token =
        (globalThis as unknown as InPage).document.querySelector('meta[name="taskworker-token"]')?.getAttribute('content') ?? '';
      const r = await fetch('/api/job/retry', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-taskworker-token': token },
        body: JSON.stringify({ id: 'ui-retry' }),
      });
      return r.status;
    });
    expect(refused).toBe(403);
    await ro.close();
    expect(await jobState('ui-retry')).toBe('archived');

    // The fault fixed, Retry: the job runs again and succeeds.
    writeFileSync(flag, 'up');
    await page.click('button:has-text("Retry")');
    expect(await page.locator('[role="dialog"]').textContent()).toContain('goes back to slow with its attempts reset');
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await until(
      async () => (await page.locator('[data-testid="action-outcome"]').textContent()) === 'sent back to slow, attempts reset',
      'the retry outcome',
    );
    await until(async () => (await jobState('ui-retry')) === 'succeeded', 'the retried job to succeed');
    expect((await ctx.jobs.get('ui-retry'))?.result).toBe(JSON.stringify({ posted: 'retry me' }));
    await until(async () => (await page.locator('h2 .badge').textContent()) === 'succeeded', 'the job page to say succeeded');
    await shoot('job-retried');
  });

  it("a key's page shows its order: the archived event holding it, the events waiting behind it in their order; retried, they run in that order", async () => {
    const flag = join(scratch, 'account-flag');
    const ids = ['ui-ord-0', 'ui-ord-1', 'ui-ord-2'];
    for (const [n, id] of ids.entries()) await stack.publisher.publish('account-event', { flag, n }, { id, key: 'acct 9' });
    await until(async () => (await jobState('ui-ord-0')) === 'archived', 'the first event to be archived');
    await until(
      async () => (await jobState('ui-ord-1')) === 'waiting-key' && (await jobState('ui-ord-2')) === 'waiting-key',
      "the later events to wait in the key's line",
    );
    // From a waiting event's page, its key links to the key's page.
    await page.goto(`${ui.url}#/job/ui-ord-1`);
    await page.locator('[data-testid="key"]').waitFor();
    expect(await page.locator('[data-testid="key"]').textContent()).toBe('acct 9 · #2 in its order');
    await page.click('[data-testid="key"] a');
    const rows = page.locator('[data-testid="key-line"] tr[data-job]');
    await until(async () => (await rows.count()) === 3, 'the key line listed');
    expect(await page.locator('[data-testid="key-turn"]').textContent()).toBe('#1 of #3 · 3 not ended');
    const shown = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    const states = await Promise.all(ids.map(jobState));
    expect(shown).toEqual(ids.map((id, i) => [String(i + 1), `#${i + 1}`, id, states[i]]));
    expect(states).toEqual(['archived', 'waiting-key', 'waiting-key']);
    await shoot('key-blocked');

    // The account service back, the held event retried from its page: the three run in publish order.
    writeFileSync(flag, 'up');
    await page.click('[data-testid="key-line"] a:has-text("ui-ord-0")');
    await page.click('button:has-text("Retry")');
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await until(async () => (await Promise.all(ids.map(jobState))).every((s) => s === 'succeeded'), 'the three events to succeed');
    const applied = await Promise.all(ids.map(async (id) => (JSON.parse((await ctx.jobs.get(id))?.result ?? '{}') as { at: number }).at));
    expect(applied).toEqual([...applied].sort((a, b) => a - b));
    await page.goto(`${ui.url}#/key/account-event?key=${encodeURIComponent('acct 9')}`);
    await until(
      async () => (await page.locator('[data-testid="key-turn"]').textContent()) === '#4 of #3 · 0 not ended',
      'the turn past the last event',
    );
    expect(await page.locator('[data-testid="key-line"]').count()).toBe(0);
  });

  it('the job page runs a parked job now (sent to its queue, it runs); a job delayed in SQS says why it cannot be; read-only refuses it', async () => {
    await stack.publisher.publish('greet', { name: 'Now' }, { id: 'ui-run-now', delaySeconds: 3600 });
    // An hour ahead: its message reaches a dispatcher at once, which parks it with its body.
    await until(async () => {
      const r = await ctx.jobs.get('ui-run-now');
      return r?.state === 'scheduled' && r.announced !== true;
    }, 'ui-run-now to be parked');
    const due = (await ctx.jobs.get('ui-run-now'))?.runAt as number;

    const ro = await browser.newPage();
    await ro.goto(`${readOnlyUi.url}#/job/ui-run-now`);
    const roRun = ro.locator('button:has-text("Run now")');
    await roRun.waitFor();
    expect(await roRun.isDisabled()).toBe(true);
    const refused = await ro.evaluate(async () => {
      const token =
        (globalThis as unknown as InPage).document.querySelector('meta[name="taskworker-token"]')?.getAttribute('content') ?? '';
      const r = await fetch('/api/job/run-now', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-taskworker-token': token },
        body: JSON.stringify({ id: 'ui-run-now' }),
      });
      return r.status;
    });
    expect(refused).toBe(403);
    await ro.close();
    expect(await ctx.jobs.get('ui-run-now')).toMatchObject({ state: 'scheduled', runAt: due });

    await page.goto(`${ui.url}#/job/ui-run-now`);
    await page.click('button:has-text("Run now")');
    expect(await page.locator('[role="dialog"]').textContent()).toContain('It is sent to fast at once.');
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await until(
      async () => (await page.locator('[data-testid="action-outcome"]').textContent()) === 'sent to fast now',
      'the run-now outcome',
    );
    await until(async () => (await jobState('ui-run-now')) === 'succeeded', 'the job to run now, not in an hour');
    expect((await ctx.jobs.get('ui-run-now'))?.result).toBe(JSON.stringify({ hello: 'Now' }));
    await until(async () => (await page.locator('h2 .badge').textContent()) === 'succeeded', 'the job page to say succeeded');

    // Ten minutes ahead: its message waits in SQS, which cannot bring it forward; the page says so and offers no button.
    await stack.publisher.publish('ledger', { flag: join(scratch, 'never'), note: 'soon' }, { id: 'ui-soon', delaySeconds: 600 });
    await page.goto(`${ui.url}#/job/ui-soon`);
    await page.locator('[data-testid="not-runnable-now"]').waitFor();
    expect(await page.locator('[data-testid="not-runnable-now"]').textContent()).toContain('SQS cannot bring a delayed message forward');
    expect(await page.locator('button:has-text("Run now")').count()).toBe(0);
    await shoot('job-delayed');
    await stack.publisher.cancel('ui-soon');
  });

  it("the queue page gives each histogram's exact figures beside its buckets: jobs, mean and standard deviation from the stats' sums", async () => {
    await page.goto(`${ui.url}#/queue/fast`);
    const table = page.locator('[data-testid="exact-durations"]');
    await table.waitFor();
    const day = await ctx.stats.get('fast', utcDay(Date.now()));
    const row = table.locator(`tr[data-row="run, ${day?.day}"]`);
    await until(async () => {
      const now = await ctx.stats.get('fast', utcDay(Date.now()));
      return (await row.locator('[data-field="mean"]').textContent()) === exactDuration(mean(now?.run as NonNullable<typeof now>['run']));
    }, 'the run mean to be the stats sum over the count');
    expect(await table.locator('tr[data-row]').count()).toBe(4);
  });

  it('the pause button stops a queue (its messages wait, the overview says since when); resume drains it; read-only refuses it', async () => {
    await page.goto(`${ui.url}#/`);
    const row = page.locator('tr[data-queue="fast"]');
    await row.locator('button:has-text("Pause")').click();
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await row.locator('[data-field="paused"]').waitFor();
    const pausedAt = (await ctx.controls?.read(true))?.queues.fast?.pausedAt;
    expect(pausedAt).toBeGreaterThan(0);
    expect(await row.locator('[data-field="paused"]').getAttribute('title')).toBe(
      `paused since ${new Date(pausedAt as number).toISOString()}`,
    );

    // Read-only: the button is disabled and the server refuses the call, whatever sends it.
    const ro = await browser.newPage();
    await ro.goto(`${readOnlyUi.url}#/`);
    const roButton = ro.locator('tr[data-queue="fast"] button:has-text("Resume")');
    await roButton.waitFor();
    expect(await roButton.isDisabled()).toBe(true);
    const refused = await ro.evaluate(async () => {
      const token =
        (globalThis as unknown as InPage).document.querySelector('meta[name="taskworker-token"]')?.getAttribute('content') ?? '';
      const r = await fetch('/api/queue/control', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-taskworker-token': token },
        body: JSON.stringify({ queue: 'fast', action: 'resume' }),
      });
      return r.status;
    });
    expect(refused).toBe(403);
    await ro.close();
    expect((await ctx.controls?.read(true))?.queues.fast?.pausedAt).toBe(pausedAt);

    // The dispatchers read the controls every 2 s: what is published after that waits, unreceived.
    await new Promise((r) => setTimeout(r, 3000));
    const ids = ['ui-paused-1', 'ui-paused-2', 'ui-paused-3'];
    for (const id of ids) await stack.publisher.publish('greet', { name: id }, { id });
    await new Promise((r) => setTimeout(r, 4000));
    expect(await ctx.queues.depth(ctx.urls.queues.fast as string)).toEqual({ visible: 3, inFlight: 0, delayed: 0 });
    expect(await Promise.all(ids.map(jobState))).toEqual(['queued', 'queued', 'queued']);

    await row.locator('button:has-text("Resume")').click();
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await until(async () => (await row.locator('[data-field="paused"]').count()) === 0, 'the overview to show fast running');
    await until(async () => (await Promise.all(ids.map(jobState))).every((state) => state === 'succeeded'), 'the paused jobs to run');
  });

  it("the priority/SLA form overrides a queue's priority and SLA (shown overridden, the configured value beside it), refuses a bad value naming it, and reset returns to the config; read-only refuses it", async () => {
    await page.goto(`${ui.url}#/`);
    const row = page.locator('tr[data-queue="slow"]');
    const form = page.locator('[data-testid="queue-control-form"]');
    const outcome = page.locator('[data-testid="action-outcome"]');
    await row.locator('button:has-text("Priority/SLA…")').click();
    // A bad value goes to the server as typed, and its refusal names it.
    await form.locator('input[name="priority"]').fill('500');
    await form.locator('button:has-text("Set…")').click();
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await outcome.waitFor();
    expect(await outcome.textContent()).toBe('priority 500: expected an integer from 1 to 100');
    expect((await ctx.controls?.read(true))?.queues.slow?.priority).toBeUndefined();

    await form.locator('input[name="priority"]').fill('95');
    await form.locator('input[name="sla"]').fill('45');
    await form.locator('button:has-text("Set…")').click();
    expect(await page.locator('[role="dialog"]').textContent()).toContain(
      "Set slow's priority to 95 (configured 10) and SLA to 45 s (configured 120 s) for every dispatcher, until reset?",
    );
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await until(async () => (await outcome.textContent())?.startsWith('slow: priority 95'), 'the set outcome');
    expect(await outcome.textContent()).toBe('slow: priority 95 (configured 10), SLA 45 s (configured 120 s)');
    expect((await ctx.controls?.read(true))?.queues.slow).toMatchObject({ priority: 95, slaSeconds: 45 });
    // The overview shows what is in force, marked overridden, with the configured value beside it.
    await until(async () => (await row.locator('[data-field="priority-value"]').textContent()) === '95', 'the overview to show 95');
    expect(await row.locator('[data-field="priority"] [data-field="overridden"]').textContent()).toBe('overridden · config 10');
    expect(await row.locator('[data-field="sla-value"]').textContent()).toBe('45.0 s');
    expect(await row.locator('td.age [data-field="overridden"]').textContent()).toBe('overridden · config 2.0 min');
    // So does the queue's own page.
    await page.goto(`${ui.url}#/queue/slow`);
    const settings = page.locator('[data-testid="queue-settings"]');
    await settings.locator('[data-field="priority-value"]').waitFor();
    expect(await settings.locator('[data-field="priority-value"]').textContent()).toBe('95');
    expect(await settings.locator('[data-field="overridden"]').allTextContents()).toEqual([
      'overridden · config 10',
      'overridden · config 2.0 min',
    ]);
    await shoot('queue-override');

    // Read-only: the button is disabled, the form never opens, and the server refuses the call.
    const ro = await browser.newPage();
    await ro.goto(`${readOnlyUi.url}#/`);
    const roButton = ro.locator('tr[data-queue="slow"] button:has-text("Priority/SLA…")');
    await roButton.waitFor();
    expect(await roButton.isDisabled()).toBe(true);
    expect(await ro.locator('tr[data-queue="slow"] button:has-text("Reset priority/SLA")').isDisabled()).toBe(true);
    const refused = await ro.evaluate(async () => {
      const token =
        (globalThis as unknown as InPage).document.querySelector('meta[name="taskworker-token"]')?.getAttribute('content') ?? '';
      const r = await fetch('/api/queue/control', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-taskworker-token': token },
        body: JSON.stringify({ queue: 'slow', action: 'set', priority: 1 }),
      });
      return r.status;
    });
    expect(refused).toBe(403);
    await ro.close();
    expect((await ctx.controls?.read(true))?.queues.slow).toMatchObject({ priority: 95, slaSeconds: 45 });

    // Reset: back to the config, the marks gone.
    await page.goto(`${ui.url}#/`);
    await row.locator('button:has-text("Reset priority/SLA")').click();
    await page.click('[role="dialog"] button:has-text("Confirm")');
    await until(async () => (await row.locator('[data-field="overridden"]').count()) === 0, 'the overview to show the config again');
    expect(await row.locator('[data-field="priority-value"]').textContent()).toBe('10');
    expect((await ctx.controls?.read(true))?.queues.slow?.priority).toBeUndefined();
  });

  it('the workers page lists a live dispatcher invocation and a vanished one with the job it held, what became of it, and a link to it', async () => {
    await stack.publisher.publish('greet', { name: 'Grace' }, { id: 'held-ui' });
    await until(async () => (await jobState('held-ui')) === 'succeeded', 'held-ui to succeed');
    const ranBy = (await ctx.jobs.get('held-ui'))?.history.find((h) => h.what === 'succeeded')?.worker;
    const now = Date.now();
    const place = { function: 'uitest-ui-dispatcher', requestId: 'req-gone', container: 'local/1' };
    await ctx.workers?.beat({
      id: `gone-1@${now - 90_000}`,
      workerId: 'gone-1',
      role: 'scheduled',
      place,
      startedAt: now - 90_000,
      deadline: now + 60_000,
      heardAt: now - 60_000,
      jobs: ['held-ui'],
      held: 1,
    });
    await ctx.workers?.beat({
      id: `live-1@${now}`,
      workerId: 'live-1',
      role: 'scale-out',
      place: { ...place, requestId: 'req-live' },
      startedAt: now,
      deadline: now + 300_000,
      heardAt: now,
      jobs: [],
      held: 0,
      weights: { fast: 0.8, slow: 0.2 },
      usage: { rssMb: 212, limitMb: 1536, cpuPercent: 43 },
    });
    await page.goto(`${ui.url}#/workers`);
    const gone = page.locator('[data-testid="workers"] tr[data-worker="gone-1"]');
    await gone.waitFor();
    expect(await gone.getAttribute('data-status')).toBe('vanished');
    expect(await gone.locator('[data-job="held-ui"] [data-fate]').textContent()).toBe(`succeeded by ${ranBy}`);
    const live = page.locator('[data-testid="workers"] tr[data-worker="live-1"]');
    expect(await live.getAttribute('data-status')).toBe('live');
    expect(await live.textContent()).toContain('fast 80%, slow 20%');
    expect(await live.textContent()).toContain('req-live');
    expect(await live.locator('[data-field="usage"]').textContent()).toBe('212 of 1536 MB · CPU 43%');
    expect(await gone.locator('[data-field="usage"]').textContent()).toBe('–');
    await shoot('workers');
    await gone.locator('a', { hasText: 'held-ui' }).click();
    await page.locator('[data-testid="job-id"]', { hasText: 'held-ui' }).waitFor();
    // Read-only shows it as well: it changes nothing.
    const ro = await browser.newPage();
    await ro.goto(`${readOnlyUi.url}#/workers`);
    await ro.locator('[data-testid="workers"] tr[data-worker="gone-1"]').waitFor();
    await ro.close();
  });

  it('read-only: actions are disabled in the page and refused by the server, nothing changes', async () => {
    const ro = await browser.newPage();
    await ro.goto(`${readOnlyUi.url}#/archive`);
    await ro.locator('header .badge', { hasText: 'read-only' }).waitFor();
    expect(await ro.locator('button.action').first().isDisabled()).toBe(true);
    const depth = await ctx.queues.depth(ctx.urls.queues.fast as string);
    // What a script of the page itself could do, token and all.
    const answer = await ro.evaluate(async () => {
      const token =
        (globalThis as unknown as InPage).document.querySelector('meta[name="taskworker-token"]')?.getAttribute('content') ?? '';
      const r = await fetch('/api/publish', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-taskworker-token': token },
        body: JSON.stringify({ task: 'greet', payload: { name: 'x' } }),
      });
      return { status: r.status, body: (await r.json()) as { error: string } };
    });
    expect(answer.status).toBe(403);
    expect(answer.body.error).toContain('read-only');
    expect(await ctx.queues.depth(ctx.urls.queues.fast as string)).toEqual(depth);
    await ro.close();
  });

  it('the page raised no error and opened no dialog', () => {
    expect(pageErrors).toEqual([]);
    expect(dialogs).toEqual([]);
  });
});

/**
 * Draws the selector benchmark's wait times as an SVG: one panel per workload; in each, per
 * selector, a bar per queue (priority) for its p99 wait and a tick for its max, on a log scale.
 * Reads the JSON `npm run bench:selectors -- --json` prints; the same JSON gives the same SVG.
 *
 *   node scripts/run-ts.mjs bench/chart.ts bench/results/selectors.json bench/results/selector-waits.svg
 */
import { readFileSync, writeFileSync } from 'node:fs';

interface QueueWaits {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

interface SelectorsDocument {
  readonly default: string;
  readonly seeds: readonly number[];
  readonly queues: ReadonlyArray<{ readonly name: string; readonly priority: number; readonly slaSeconds: number }>;
  readonly workloads: ReadonlyArray<{
    readonly name: string;
    readonly description: string;
    readonly selectors: Readonly<
      Record<string, { readonly queues: Readonly<Record<string, QueueWaits>>; readonly sqsRequestsPerTask: number }>
    >;
  }>;
}

const COLORS = ['#c0392b', '#2e86c1', '#7f8c8d'];
const PANEL_W = 660;
const PANEL_H = 270;
const MARGIN = { left: 56, right: 16, top: 34, bottom: 58 };
const COLUMNS = 2;
/** Log scale: 10 ms to 2000 s. */
const MIN_S = 0.01;
const MAX_S = 2000;
const TICKS = [0.01, 0.1, 1, 10, 100, 1000];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (n: number) => (Math.round(n * 100) / 100).toString();

function panel(doc: SelectorsDocument, index: number): string {
  const w = doc.workloads[index];
  if (!w) return '';
  const x0 = (index % COLUMNS) * PANEL_W;
  const y0 = 40 + Math.floor(index / COLUMNS) * PANEL_H;
  const plotW = PANEL_W - MARGIN.left - MARGIN.right;
  const plotH = PANEL_H - MARGIN.top - MARGIN.bottom;
  const y = (seconds: number) => {
    const v = Math.min(MAX_S, Math.max(MIN_S, seconds));
    return y0 + MARGIN.top + plotH * (1 - Math.log10(v / MIN_S) / Math.log10(MAX_S / MIN_S));
  };
  const out: string[] = [];
  out.push(`<text x="${x0 + MARGIN.left}" y="${y0 + 20}" class="panel">${esc(w.name)}: ${esc(w.description)}</text>`);
  for (const t of TICKS) {
    out.push(`<line x1="${x0 + MARGIN.left}" x2="${x0 + MARGIN.left + plotW}" y1="${fmt(y(t))}" y2="${fmt(y(t))}" class="grid"/>`);
    out.push(
      `<text x="${x0 + MARGIN.left - 6}" y="${fmt(y(t) + 4)}" class="tick" text-anchor="end">${t < 1 ? t : t.toLocaleString('en')} s</text>`,
    );
  }
  const selectors = Object.keys(w.selectors);
  const groupW = plotW / selectors.length;
  const barW = Math.min(14, (groupW - 10) / doc.queues.length);
  selectors.forEach((name, g) => {
    const gx = x0 + MARGIN.left + g * groupW + (groupW - barW * doc.queues.length) / 2;
    doc.queues.forEach((q, i) => {
      const f = w.selectors[name]?.queues[q.name];
      if (!f) return;
      const bx = gx + i * barW;
      const top = y(f.p99);
      const base = y(MIN_S);
      out.push(
        `<rect x="${fmt(bx)}" y="${fmt(top)}" width="${fmt(barW - 1)}" height="${fmt(Math.max(0.5, base - top))}" fill="${COLORS[i % COLORS.length]}"><title>${esc(`${name} · ${q.name}: p50 ${f.p50} s, p99 ${f.p99} s, max ${f.max} s`)}</title></rect>`,
      );
      out.push(`<line x1="${fmt(bx)}" x2="${fmt(bx + barW - 1)}" y1="${fmt(y(f.max))}" y2="${fmt(y(f.max))}" class="max"/>`);
    });
    // Long names break after their last hyphen; the requests per task go underneath.
    const cx = fmt(x0 + MARGIN.left + g * groupW + groupW / 2);
    const cut = name.length > 14 ? name.lastIndexOf('-') + 1 : name.length;
    const lines = [name.slice(0, cut), name.slice(cut)].filter((l) => l.length > 0);
    if (name === doc.default) lines[lines.length - 1] += ' ★';
    const baseY = y0 + PANEL_H - MARGIN.bottom;
    for (const [k, line] of lines.entries())
      out.push(
        `<text x="${cx}" y="${baseY + 14 + k * 12}" class="${name === doc.default ? 'sel default' : 'sel'}" text-anchor="middle">${esc(line)}</text>`,
      );
    out.push(
      `<text x="${cx}" y="${baseY + 40}" class="tick" text-anchor="middle">${w.selectors[name]?.sqsRequestsPerTask.toFixed(2)} req/task</text>`,
    );
  });
  return out.join('\n');
}

function chart(doc: SelectorsDocument): string {
  const rows = Math.ceil((doc.workloads.length + 1) / COLUMNS);
  const width = PANEL_W * COLUMNS;
  const height = 40 + rows * PANEL_H;
  const legendIndex = doc.workloads.length;
  const lx = (legendIndex % COLUMNS) * PANEL_W + MARGIN.left;
  const ly = 40 + Math.floor(legendIndex / COLUMNS) * PANEL_H + MARGIN.top;
  const legend = [
    ...doc.queues.map(
      (q, i) =>
        `<rect x="${lx}" y="${ly + i * 22}" width="14" height="14" fill="${COLORS[i % COLORS.length]}"/><text x="${lx + 22}" y="${ly + i * 22 + 12}" class="legend">${esc(`${q.name} (priority ${q.priority}, SLA ${q.slaSeconds} s)`)}</text>`,
    ),
    `<text x="${lx}" y="${ly + doc.queues.length * 22 + 16}" class="legend">bar: p99 wait (publish → start); tick: max wait</text>`,
    `<text x="${lx}" y="${ly + doc.queues.length * 22 + 36}" class="legend">★ the default selector; log scale; seeds ${doc.seeds.join(', ')} pooled</text>`,
    `<text x="${lx}" y="${ly + doc.queues.length * 22 + 56}" class="legend">npm run bench:selectors -- --json</text>`,
  ];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif">`,
    '<style>.panel{font-size:12px;font-weight:bold}.tick{font-size:10px;fill:#555}.sel{font-size:10.5px}.default{font-weight:bold}.legend{font-size:12px}.grid{stroke:#e3e3e3}.max{stroke:#111;stroke-width:1.5}</style>',
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="16" y="26" font-size="16" font-weight="bold">Wait time per priority per selector — Kale's three queues, 4 dispatchers × 10 slots</text>`,
    ...doc.workloads.map((_, i) => panel(doc, i)),
    ...legend,
    '</svg>',
    '',
  ].join('\n');
}

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  process.stderr.write('usage: node scripts/run-ts.mjs bench/chart.ts SELECTORS.json OUT.svg\n');
  process.exit(2);
}
writeFileSync(output, chart(JSON.parse(readFileSync(input, 'utf8')) as SelectorsDocument));
process.stderr.write(`wrote ${output}\n`);

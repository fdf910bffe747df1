import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  type ChartConfiguration,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Title,
  Tooltip,
} from 'chart.js';
import { useEffect, useRef } from 'preact/hooks';
import { bucketQuantile, bucketUpperMs, QLESS_BUCKETS } from '../../lib/policy/stat-sums';
import type { QueueDayStats, Throughput } from '../api-types';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Title, Tooltip, Legend);

type DurationStats = QueueDayStats['wait'];

/** Coarse bands over qless's buckets, for a histogram a person can read. */
const BANDS: ReadonlyArray<{ label: string; upToMs: number }> = [
  { label: '<1 s', upToMs: 1_000 },
  { label: '1–2 s', upToMs: 2_000 },
  { label: '2–5 s', upToMs: 5_000 },
  { label: '5–10 s', upToMs: 10_000 },
  { label: '10–30 s', upToMs: 30_000 },
  { label: '30–60 s', upToMs: 60_000 },
  { label: '1–5 min', upToMs: 300_000 },
  { label: '5–15 min', upToMs: 900_000 },
  { label: '15–60 min', upToMs: 3_600_000 },
  { label: '1–6 h', upToMs: 21_600_000 },
  { label: '6–24 h', upToMs: 86_400_000 },
  { label: '≥1 day', upToMs: Number.POSITIVE_INFINITY },
];

export function banded(d: DurationStats | undefined): number[] {
  const counts = BANDS.map(() => 0);
  if (!d) return counts;
  for (const bucket of QLESS_BUCKETS) {
    const n = d.buckets[bucket] ?? 0;
    if (n === 0) continue;
    const found = BANDS.findIndex((b) => bucketUpperMs(bucket) <= b.upToMs);
    const band = found === -1 ? BANDS.length - 1 : found;
    counts[band] = (counts[band] ?? 0) + n;
  }
  return counts;
}

/** Adds two days' durations (for a period's histogram). */
export function mergeDurations(days: readonly DurationStats[]): DurationStats {
  const buckets: Record<string, number> = {};
  let count = 0;
  let sum = 0;
  let sumSquares = 0;
  for (const d of days) {
    count += d.count;
    sum += d.sum;
    sumSquares += d.sumSquares;
    for (const [k, v] of Object.entries(d.buckets)) buckets[k] = (buckets[k] ?? 0) + v;
  }
  return { count, sum, sumSquares, buckets };
}

/** ms → seconds for a chart axis; NaN (no samples) stays a gap. */
const seconds = (ms: number) => (Number.isFinite(ms) ? ms / 1000 : null);

function ChartCanvas({ config, label }: { config: ChartConfiguration; label: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (!canvas.current) return undefined;
    const chart = new Chart(canvas.current, config);
    return () => chart.destroy();
  }, [JSON.stringify(config.data)]);
  return (
    <div class="chart">
      <canvas ref={canvas} role="img" aria-label={label} />
    </div>
  );
}

const common = { animation: false as const, responsive: true, maintainAspectRatio: false };

export function HistogramChart({ title, wait, run }: { title: string; wait: DurationStats; run: DurationStats }) {
  return (
    <ChartCanvas
      label={title}
      config={{
        type: 'bar',
        data: {
          labels: BANDS.map((b) => b.label),
          datasets: [
            { label: `wait (${wait.count})`, data: banded(wait), backgroundColor: '#4e79a7' },
            { label: `run (${run.count})`, data: banded(run), backgroundColor: '#f28e2b' },
          ],
        },
        options: {
          ...common,
          plugins: { title: { display: true, text: title } },
          scales: { y: { beginAtZero: true, title: { display: true, text: 'jobs' } } },
        },
      }}
    />
  );
}

export function TrendChart({ days }: { days: readonly QueueDayStats[] }) {
  const line = (label: string, color: string, of: (d: QueueDayStats) => DurationStats, q: number) => ({
    label,
    data: days.map((d) => seconds(bucketQuantile(of(d), q))),
    borderColor: color,
    backgroundColor: color,
  });
  return (
    <ChartCanvas
      label="wait and run time by day"
      config={{
        type: 'line',
        data: {
          labels: days.map((d) => d.day),
          datasets: [
            line('wait p50 (s)', '#4e79a7', (d) => d.wait, 0.5),
            line('wait p99 (s)', '#76b7b2', (d) => d.wait, 0.99),
            line('run p99 (s)', '#f28e2b', (d) => d.run, 0.99),
          ],
        },
        options: { ...common, scales: { y: { beginAtZero: true, title: { display: true, text: 'seconds (bucket upper bound)' } } } },
      }}
    />
  );
}

export function OutcomeChart({ days, reasons }: { days: readonly QueueDayStats[]; reasons: readonly string[] }) {
  const count = (d: QueueDayStats, key: string) => (d.counters as Record<string, number | undefined>)[key] ?? 0;
  const colors = ['#59a14f', '#edc948', '#b07aa1', '#9c755f', '#bab0ac', '#e15759', '#ff9da7', '#76b7b2'];
  return (
    <ChartCanvas
      label="outcomes by day"
      config={{
        type: 'bar',
        data: {
          labels: days.map((d) => d.day),
          datasets: [
            { label: 'succeeded', data: days.map((d) => count(d, 'succeeded')), backgroundColor: '#59a14f', stack: 'o' },
            { label: 'retried', data: days.map((d) => count(d, 'retried')), backgroundColor: '#edc948', stack: 'o' },
            { label: 'deferred', data: days.map((d) => count(d, 'deferred')), backgroundColor: '#bab0ac', stack: 'o' },
            ...reasons.map((reason, i) => ({
              label: `archived: ${reason}`,
              data: days.map((d) => (d.archived as Record<string, number | undefined>)[reason] ?? 0),
              backgroundColor: colors[(i + 5) % colors.length] as string,
              stack: 'o',
            })),
          ],
        },
        options: {
          ...common,
          scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, title: { display: true, text: 'jobs' } } },
        },
      }}
    />
  );
}

const QUEUE_COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

/** Jobs per minute: per queue, started (dashed), succeeded (solid) and archived (dotted), one colour a queue. */
export function ThroughputChart({ throughput }: { throughput: Throughput }) {
  const queues = Object.entries(throughput.queues);
  return (
    <ChartCanvas
      label="jobs per minute over the last hour"
      config={{
        type: 'line',
        data: {
          labels: throughput.minutes.map((m) => m.slice(11)),
          datasets: queues.flatMap(([queue, counts], i) => {
            const color = QUEUE_COLORS[i % QUEUE_COLORS.length] as string;
            const line = (what: 'started' | 'succeeded' | 'archived', borderDash: number[]) => ({
              label: `${queue} ${what}`,
              data: counts.map((c) => c[what]),
              borderColor: color,
              backgroundColor: color,
              borderDash,
              pointRadius: 0,
            });
            return [line('started', [6, 3]), line('succeeded', []), line('archived', [2, 2])];
          }),
        },
        options: {
          ...common,
          scales: {
            y: { beginAtZero: true, title: { display: true, text: 'jobs per minute' } },
            x: { title: { display: true, text: 'UTC' } },
          },
        },
      }}
    />
  );
}

import type { EventDeclaration, SubscriptionConfig } from '../config/event-config';
import { taskStatsKey, utcDay } from '../policy/stat-sums';
import type { StatsStore } from '../track/stats-store';

/** One subscriber task of this app, and what its jobs did today (from its task day in the stats table). */
export interface SubscriberView {
  readonly task: string;
  readonly queue: string;
  readonly today?: { readonly succeeded: number; readonly retried: number; readonly archived: number };
}

export interface EventsView {
  readonly version: string;
  /** Events this app emits, each with its subscribers in this app. */
  readonly emits: ReadonlyArray<{ readonly name: string; readonly description?: string; readonly subscribers: readonly SubscriberView[] }>;
  /** Events of other apps this app's tasks take. */
  readonly receives: ReadonlyArray<{
    readonly app: string;
    readonly version: string;
    readonly name: string;
    readonly subscribers: readonly SubscriberView[];
  }>;
}

/**
 * What {@link listEvents} reads of the config and of each task definition. Structural rather than
 * `TaskworkerConfig` and `TaskDefinition`, whose modules need Node: the dashboard's page imports
 * this module's answer types (dashboard/api-types.ts) and compiles without Node.
 */
export interface EventsConfig {
  readonly events: readonly EventDeclaration[];
  readonly subscriptions: readonly SubscriptionConfig[];
}
export interface EventSubscriberTask {
  readonly name: string;
  readonly queue: string;
  /** The events it takes (`on`). */
  readonly on: readonly string[];
}

/**
 * The app's events: those it declares and those it subscribes to, with the tasks of this app that
 * take each and their counts for today (one read of each subscriber's task day; none without a
 * stats store). Subscribers in other apps are theirs to list: SNS keeps them, not this app.
 */
export async function listEvents(
  config: EventsConfig,
  version: string,
  tasks: readonly EventSubscriberTask[],
  stats: StatsStore | undefined,
  now: number,
): Promise<EventsView> {
  const day = utcDay(now);
  const subscribers = async (event: string): Promise<SubscriberView[]> =>
    Promise.all(
      tasks
        .filter((t) => t.on.includes(event))
        .sort((a, b) => a.name.localeCompare(b.name))
        .map(async (t) => {
          const d = stats ? await stats.get(taskStatsKey(t.name), day) : undefined;
          const archived = Object.values(d?.archived ?? {}).reduce((a, n) => a + (n ?? 0), 0);
          return {
            task: t.name,
            queue: t.queue,
            ...(stats ? { today: { succeeded: d?.counters.succeeded ?? 0, retried: d?.counters.retried ?? 0, archived } } : {}),
          };
        }),
    );
  return {
    version,
    emits: await Promise.all(
      config.events.map(async (e) => ({
        name: e.name,
        ...(e.description !== undefined ? { description: e.description } : {}),
        subscribers: await subscribers(e.name),
      })),
    ),
    receives: await Promise.all(
      config.subscriptions.flatMap((s) =>
        s.events.map(async (name) => ({ app: s.app, version: s.version, name, subscribers: await subscribers(name) })),
      ),
    ),
  };
}

/** `taskworker events` as text. */
export function renderEvents(view: EventsView): string {
  const lines: string[] = [];
  const subs = (list: readonly SubscriberView[]) =>
    list.length === 0
      ? ['    (no subscriber in this app)']
      : list.map(
          (s) =>
            `    ${s.task} on ${s.queue}${s.today ? `: today ${s.today.succeeded} succeeded, ${s.today.retried} retried, ${s.today.archived} archived` : ''}`,
        );
  if (view.emits.length === 0 && view.receives.length === 0)
    return `no events: the config declares none and subscribes to none (version ${view.version})`;
  for (const e of view.emits) lines.push(`emits ${e.name}${e.description ? ` — ${e.description}` : ''}`, ...subs(e.subscribers));
  for (const r of view.receives) lines.push(`receives ${r.name} from ${r.app} ${r.version}`, ...subs(r.subscribers));
  return lines.join('\n');
}

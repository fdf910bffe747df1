import type { TaskworkerConfig } from '../config/app-config';
import { eventTopicName } from '../layout/topics';
import type { TaskDefinition, TaskRegistry } from '../tasks/task';

/** The topic an event reaches this app through: its own version's, or a subscribed app's. */
export interface EventTopic {
  readonly app: string;
  readonly version: string;
  /** Given in the subscription; otherwise `<app>-<version>-events` in the subscriber's account and region. */
  readonly topicArn?: string;
}

/**
 * One SNS subscription: `queue` subscribed to `topic`, raw delivery, with a filter policy on the
 * body's `event` naming `events` (those its subscriber tasks take). One per queue and topic: SNS
 * keeps one subscription per topic and endpoint.
 */
export interface EventRoute {
  readonly queue: string;
  readonly topic: EventTopic;
  readonly events: readonly string[];
}

/**
 * The subscriptions the version needs: for every queue with subscriber tasks (or tasks waiting for
 * events), one per topic its events come through. An event no task of this version takes or waits
 * for is not subscribed at all.
 */
export function eventRoutes(config: TaskworkerConfig, version: string, registry: TaskRegistry): EventRoute[] {
  const topicOf = (event: string): EventTopic | undefined => {
    if (config.events.some((e) => e.name === event)) return { app: config.app, version };
    const sub = config.subscriptions.find((s) => s.events.includes(event));
    return sub ? { app: sub.app, version: sub.version, ...(sub.topicArn ? { topicArn: sub.topicArn } : {}) } : undefined;
  };
  const routes = new Map<string, { queue: string; topic: EventTopic; events: Set<string> }>();
  for (const def of registry.values()) {
    // A task's waited events reach its queue as its subscriptions do: the dispatcher resumes the waiting jobs.
    for (const event of new Set([...def.on, ...def.waitsFor.map((w) => w.event)])) {
      const topic = topicOf(event);
      if (!topic) continue; // the registry refuses such a task; a bare registry here just has no route
      const key = `${def.queue}\n${topic.topicArn ?? eventTopicName(topic.app, topic.version)}`;
      const route = routes.get(key) ?? { queue: def.queue, topic, events: new Set<string>() };
      route.events.add(event);
      routes.set(key, route);
    }
  }
  // In the config's queue order, then by topic: the same layout every time it is drawn.
  const order = (queue: string) => config.queues.findIndex((q) => q.name === queue);
  return [...routes.entries()]
    .sort(([ka, a], [kb, b]) => order(a.queue) - order(b.queue) || ka.localeCompare(kb))
    .map(([, r]) => ({ queue: r.queue, topic: r.topic, events: [...r.events].sort() }));
}

/** The SNS filter policy of a route: the body's `event` is one of its events (FilterPolicyScope `MessageBody`). */
export function filterPolicy(route: Pick<EventRoute, 'events'>): { readonly event: readonly string[] } {
  return { event: route.events };
}

/** The tasks on `queue` that subscribe to `event`, in name order (each gets its own job). */
export function subscribersOn(registry: TaskRegistry, queue: string, event: string): TaskDefinition[] {
  return [...registry.values()].filter((def) => def.queue === queue && def.on.includes(event)).sort((a, b) => a.name.localeCompare(b.name));
}

/** The waits on `queue` for `event`: each task waiting for it there, with the payload field its jobs match on. */
export function waitersOn(registry: TaskRegistry, queue: string, event: string): Array<{ readonly task: string; readonly match?: string }> {
  return [...registry.values()]
    .filter((def) => def.queue === queue)
    .flatMap((def) =>
      def.waitsFor.filter((w) => w.event === event).map((w) => ({ task: def.name, ...(w.match !== undefined ? { match: w.match } : {}) })),
    )
    .sort((a, b) => a.task.localeCompare(b.task));
}

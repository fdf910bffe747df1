import type { SubscriberView } from '../../api-types';
import { get } from '../api';
import { href } from '../routing';
import { useData } from '../use-data';
import { Problem } from '../widgets';

const EVENTS_REFRESH_MS = 10_000;

/** One event's subscriber tasks in this app: each links to its task page and its queue's, with its task's counts today. */
function Subscribers({ event, subscribers }: { event: string; subscribers: readonly SubscriberView[] }) {
  if (subscribers.length === 0) return <p class="note">No subscriber in this app.</p>;
  return (
    <table class="grid">
      <thead>
        <tr>
          <th>subscriber</th>
          <th>queue</th>
          <th>succeeded today</th>
          <th>retried today</th>
          <th>archived today</th>
        </tr>
      </thead>
      <tbody>
        {subscribers.map((s) => (
          <tr key={s.task} data-event={event} data-subscriber={s.task}>
            <td>
              <a href={href('queue', `task:${s.task}`)}>{s.task}</a>
            </td>
            <td>
              <a href={href('queue', s.queue)}>{s.queue}</a>
            </td>
            <td class="num" data-field="succeeded">
              {s.today?.succeeded ?? '–'}
            </td>
            <td class="num" data-field="retried">
              {s.today?.retried ?? '–'}
            </td>
            <td class="num" data-field="archived">
              {s.today && s.today.archived > 0 ? (
                <a href={href('archive', undefined, { task: s.task })}>{s.today.archived}</a>
              ) : (
                (s.today?.archived ?? '–')
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** `taskworker events`: what the app emits and receives, and each subscriber task here (issue 24). */
export function EventsPage({ version }: { version: string }) {
  const { data: view, error } = useData(() => get('/api/events', { version }), [version], EVENTS_REFRESH_MS);
  if (!view) return <Problem error={error ?? 'loading…'} />;
  return (
    <section>
      <h2>Events</h2>
      <Problem error={error} />
      {view.emits.length === 0 && view.receives.length === 0 ? (
        <p data-testid="no-events">This app declares no events and subscribes to none (version {view.version}).</p>
      ) : (
        <p class="note">
          One emit runs every subscriber once, each as its own job ({'<event id>/<task>'}) with its own retries and archive. A subscriber’s
          counts are its task’s today, whatever ran it. Subscribers in other apps are theirs to list.
        </p>
      )}
      {view.emits.map((e) => (
        <div key={`emits ${e.name}`} data-testid="emitted-event" data-name={e.name}>
          <h3>
            {e.name} <span class="badge">emitted here</span>
          </h3>
          {e.description && <p>{e.description}</p>}
          <Subscribers event={e.name} subscribers={e.subscribers} />
        </div>
      ))}
      {view.receives.map((r) => (
        <div key={`receives ${r.app} ${r.name}`} data-testid="received-event" data-name={r.name}>
          <h3>
            {r.name}{' '}
            <span class="badge">
              from {r.app} {r.version}
            </span>
          </h3>
          <Subscribers event={r.name} subscribers={r.subscribers} />
        </div>
      ))}
    </section>
  );
}

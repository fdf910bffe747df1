/** A key's page (#/key/TASK?key=K): its limit, its order and the jobs waiting in its line, in the order they will run. */
import { get } from '../api';
import { href } from '../routing';
import { REFRESH_MS, useData } from '../use-data';
import { Problem } from '../widgets';

export function KeyPage({ version, task, keyName }: { version: string; task: string; keyName: string }) {
  const { data: view, error } = useData(() => get('/api/key', { version, task, key: keyName }), [version, task, keyName], REFRESH_MS);
  if (!view) return <Problem error={error ?? 'loading…'} />;
  return (
    <section>
      <h2>
        Key {JSON.stringify(view.key)} of task {view.task}
      </h2>
      <Problem error={error} />
      <dl class="fields" data-testid="key-facts">
        {view.limit && (
          <>
            <dt>running</dt>
            <dd data-testid="key-running">
              {view.limit.running}
              {view.limit.concurrency !== undefined ? ` of ${view.limit.concurrency} (its per-key limit)` : ''}
            </dd>
            <dt>waiting</dt>
            <dd data-testid="key-waiting">{view.limit.waiting} parked in its line</dd>
          </>
        )}
        {view.order && (
          <>
            <dt>turn</dt>
            <dd data-testid="key-turn">
              #{view.order.next} of #{view.order.last} · {view.order.pending} not ended
              {view.order.gapSince !== undefined
                ? ` · #${view.order.next} not found since ${new Date(view.order.gapSince).toISOString()} (skipped after a grace)`
                : ''}
            </dd>
          </>
        )}
        {!view.limit && !view.order && (
          <>
            <dt>rules</dt>
            <dd>no limit item and no order for this key: no job of it was seen under a per-key limit or an order</dd>
          </>
        )}
      </dl>
      {view.line.length === 0 ? (
        <p>No job waits in its line.</p>
      ) : (
        <table class="grid" data-testid="key-line">
          <thead>
            <tr>
              <th>place</th>
              <th>number</th>
              <th>job</th>
              <th>state</th>
            </tr>
          </thead>
          <tbody>
            {view.line.map((e) => (
              <tr key={e.jobId} data-job={e.jobId}>
                <td class="num">{e.place}</td>
                <td class="num">{e.number !== undefined ? `#${e.number}` : ''}</td>
                <td>
                  <a href={href('job', e.jobId)}>{e.jobId}</a>
                </td>
                <td>{e.state ?? 'sent, not yet received'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

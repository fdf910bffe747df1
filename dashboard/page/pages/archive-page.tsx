/** The archive (#/archive): archived messages by reason and task, and their replay. */
import { useState } from 'preact/hooks';
import type { Meta, ReplayResult } from '../../api-types';
import { get, post } from '../api';
import { BulkButton, BulkLog } from '../bulk-action';
import { utcTime } from '../format';
import { href } from '../routing';
import { useConfirm } from '../use-confirm';
import { useData } from '../use-data';
import { ActionButton, Choice, Problem } from '../widgets';

export function ArchivePage({ meta, version, params }: { meta: Meta; version: string; params: URLSearchParams }) {
  const reason = params.get('reason') ?? '';
  const task = params.get('task') ?? '';
  const {
    data: messages,
    error,
    reload,
  } = useData(() => get('/api/archive', { version, reason, task, limit: 100 }), [version, reason, task]);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const confirm = useConfirm();
  const replayed = (r: ReplayResult) => {
    setSelected(new Set());
    reload();
    return `replayed ${r.replayed} message(s) to their queues (attempts reset)${r.skipped.length ? `; skipped ${r.skipped.map((s) => `${s.messageId}: ${s.why}`).join('; ')}` : ''}`;
  };
  const go = (patch: Record<string, string>) => {
    location.hash = href('archive', undefined, { reason, task, ...patch });
  };
  return (
    <section>
      <h2>Archive</h2>
      <div class="filters">
        <Choice name="reason" value={reason} options={meta.reasons} all onChange={(v) => go({ reason: v })} />
        <Choice name="task" value={task} options={meta.tasks.map((t) => t.name)} all onChange={(v) => go({ task: v })} />
        <ActionButton
          label={`Replay selected (${selected.size})`}
          onClick={() =>
            selected.size > 0 &&
            confirm.ask({
              question: `Replay ${selected.size} selected message(s) to their queues, attempts reset?`,
              action: async () => replayed(await post('/api/archive/replay', { version, messageIds: [...selected] })),
            })
          }
        />
        {(['replay', 'delete'] as const).map((action) => (
          <BulkButton
            key={action}
            version={version}
            action={action}
            label={`${action === 'replay' ? 'Replay' : 'Delete'} all matching…`}
            filter={{ reason, task }}
            confirm={confirm}
            done={reload}
          />
        ))}
      </div>
      {confirm.view}
      <BulkLog version={version} />
      <Problem error={error} />
      {messages && (
        <table class="grid" data-testid="archive">
          <thead>
            <tr>
              <th />
              <th>reason</th>
              <th>task</th>
              <th>job</th>
              <th>queue</th>
              <th>attempts</th>
              <th>archived</th>
              <th>error</th>
            </tr>
          </thead>
          <tbody>
            {messages.map((m) => (
              <tr key={m.messageId} data-message={m.messageId}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`select ${m.messageId}`}
                    checked={selected.has(m.messageId)}
                    onChange={(e) => {
                      const next = new Set(selected);
                      if ((e.target as HTMLInputElement).checked) next.add(m.messageId);
                      else next.delete(m.messageId);
                      setSelected(next);
                    }}
                  />
                </td>
                <td>{m.record?.reason ?? 'no record'}</td>
                <td>{m.record?.task ?? ''}</td>
                <td>{m.record?.jobId ? <a href={href('job', m.record.jobId)}>{m.record.jobId}</a> : ''}</td>
                <td>{m.record?.queue ?? ''}</td>
                <td class="num">{m.record?.attempts ?? ''}</td>
                <td>{utcTime(m.record?.archivedAt)}</td>
                <td class="detail">
                  {m.record?.errorType ? `${m.record.errorType}: ` : ''}
                  {m.record?.detail ?? ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {messages && messages.length === 0 && <p>The archive has no message{reason || task ? ' matching' : ''}.</p>}
    </section>
  );
}

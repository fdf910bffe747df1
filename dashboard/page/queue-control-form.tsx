import { useState } from 'preact/hooks';
import type { Status } from '../api-types';
import { post, readOnlyPage } from './api';
import type { Pending } from './use-confirm';
import { Problem } from './widgets';

/** What the form sends for a field: nothing when left empty, a number when it reads as one, else the text for the server to name. */
function typedValue(text: string): number | string | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  const n = Number(trimmed);
  return Number.isFinite(n) ? n : trimmed;
}

/** One field of the form: its label, and an input showing the value in force until one is typed. */
function Field(props: { label: string; name: string; size: number; placeholder: string; value: string; onInput: (value: string) => void }) {
  return (
    <label>
      {props.label}{' '}
      <input
        name={props.name}
        size={props.size}
        placeholder={props.placeholder}
        value={props.value}
        onInput={(e) => props.onInput((e.target as HTMLInputElement).value)}
      />
    </label>
  );
}

/**
 * Sets a queue's priority and SLA over the config for every dispatcher until reset (`taskworker
 * queues set`): empty fields are left as they are; asked first like every action; the server checks
 * the values and its refusal, naming the bad one, is shown as the outcome.
 */
export function QueueControlForm(props: {
  version: string;
  queue: Status['queues'][number];
  ask: (p: Pending) => void;
  /** Reads the page's data again once a change is made (after the form is closed). */
  reload: () => void;
  onClose: () => void;
}) {
  const { queue: q } = props;
  const [priority, setPriority] = useState('');
  const [sla, setSla] = useState('');
  const [problem, setProblem] = useState<string | undefined>();
  return (
    <form
      class="controls filters"
      data-testid="queue-control-form"
      onSubmit={(e) => {
        e.preventDefault();
        const p = typedValue(priority);
        const s = typedValue(sla);
        if (p === undefined && s === undefined) {
          setProblem('give a priority and/or an SLA (empty fields are left as they are)');
          return;
        }
        setProblem(undefined);
        const parts = [
          ...(p !== undefined ? [`priority to ${p} (configured ${q.configuredPriority})`] : []),
          ...(s !== undefined ? [`SLA to ${s} s (configured ${q.configuredSlaSeconds} s)`] : []),
        ];
        props.ask({
          question: `Set ${q.queue}'s ${parts.join(' and ')} for every dispatcher, until reset?`,
          action: async () => {
            const r = await post('/api/queue/control', {
              version: props.version,
              queue: q.queue,
              action: 'set',
              ...(p !== undefined ? { priority: p } : {}),
              ...(s !== undefined ? { slaSeconds: s } : {}),
            });
            props.onClose();
            props.reload();
            const c = r.control;
            return `${r.queue}: priority ${c.priority}${c.overridden.includes('priority') ? ` (configured ${c.configuredPriority})` : ''}, SLA ${c.slaSeconds} s${c.overridden.includes('slaSeconds') ? ` (configured ${c.configuredSlaSeconds} s)` : ''}`;
          },
        });
      }}
    >
      <strong>{q.queue}</strong>
      <Field label="priority (1..100)" name="priority" size={5} placeholder={String(q.priority)} value={priority} onInput={setPriority} />
      <Field label="SLA (seconds)" name="sla" size={8} placeholder={String(q.slaSeconds)} value={sla} onInput={setSla} />
      <button type="submit" disabled={readOnlyPage}>
        Set…
      </button>
      <button type="button" onClick={props.onClose}>
        Close
      </button>
      <span class="note">
        configured: priority {q.configuredPriority}, SLA {q.configuredSlaSeconds} s · empty fields are left as they are
      </span>
      <Problem error={problem} />
    </form>
  );
}

/** The small pieces every page uses: a problem line, a labelled select, an action button, an override badge. */
import { readOnlyPage } from './api';

export function Problem({ error }: { error?: string | undefined }) {
  return error ? (
    <p class="problem" role="alert">
      {error}
    </p>
  ) : null;
}

/** A labelled select; `all` adds an empty choice meaning "any". */
export function Choice(props: {
  name: string;
  value: string;
  options: readonly string[];
  all?: boolean;
  onChange: (value: string) => void;
}) {
  return (
    <label>
      {props.name}{' '}
      <select name={props.name} value={props.value} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value)}>
        {props.all && <option value="">all</option>}
        {props.options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    </label>
  );
}

export function ActionButton({ label, onClick }: { label: string; onClick: () => void }) {
  return (
    <button type="button" class="action" disabled={readOnlyPage} title={readOnlyPage ? 'read-only dashboard' : undefined} onClick={onClick}>
      {label}
    </button>
  );
}

/** Marks a value an operator set over the config (`taskworker queues set`), the configured one beside it. */
export function Overridden({ configured }: { configured: string }) {
  return (
    <span class="badge overridden" data-field="overridden" title={`set at run time over the configured ${configured}; Reset returns to it`}>
      overridden · config {configured}
    </span>
  );
}

/**
 * A bulk action from a page's filter (`taskworker jobs bulk`): a dry run first, whose count (and
 * first few) the confirm step names, then the run itself; and the day's log of bulk operations.
 */
import type { BulkAction, BulkRequest, BulkResult } from '../api-types';
import { get, post } from './api';
import { utcTime } from './format';
import type { useConfirm } from './use-confirm';
import { useData } from './use-data';
import { ActionButton } from './widgets';

const PAST: Record<BulkAction, string> = { cancel: 'cancelled', replay: 'replayed', delete: 'deleted from the archive' };
const WHAT: Record<BulkAction, string> = {
  cancel: 'job(s) not yet ended (queued, retrying, scheduled, waiting)',
  replay: 'archived message(s) to their queues, attempts reset',
  delete: 'archived message(s) from the archive (their job records stay)',
};

/** The filter as the request carries it: empty values left out. */
function filterOf(filter: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== ''));
}

export function BulkButton(props: {
  version: string;
  action: BulkAction;
  label: string;
  filter: Readonly<Record<string, string>>;
  confirm: ReturnType<typeof useConfirm>;
  done: () => void;
}) {
  const { version, action, confirm } = props;
  const filter = filterOf(props.filter);
  const request = { version, action, ...filter } as BulkRequest;
  return (
    <ActionButton
      label={props.label}
      onClick={async () => {
        const dry: BulkResult = await post('/api/bulk', { ...request, dryRun: true });
        const named = Object.entries(filter)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ');
        confirm.ask({
          question:
            dry.matched === 0
              ? `Nothing matches${named ? ` ${named}` : ''}: nothing to ${action}.`
              : `${action[0]?.toUpperCase()}${action.slice(1)} ${dry.capped ? 'at least ' : ''}${dry.matched} ${WHAT[action]}${named ? `, matching ${named}` : ''}? ` +
                `First: ${dry.sample.map((s) => s.id).join(', ')}.`,
          action: async () => {
            if (dry.matched === 0) return 'nothing done';
            const r: BulkResult = await post('/api/bulk', { ...request, limit: dry.matched });
            props.done();
            return `${PAST[action]} ${r.done} of ${r.matched}${r.skipped.length > 0 ? `; skipped ${r.skipped.length}: ${r.skipped[0]?.id} (${r.skipped[0]?.why})${r.skipped.length > 1 ? ', …' : ''}` : ''}`;
          },
        });
      }}
    />
  );
}

/** Today's bulk operations (UTC): when, who, what, on which filter, how many. */
export function BulkLog({ version }: { version: string }) {
  const { data: entries } = useData(() => get('/api/bulk/log', { version }), [version], 30_000);
  if (!entries || entries.length === 0) return null;
  return (
    <details class="bulk-log" data-testid="bulk-log">
      <summary>Bulk operations today ({entries.length})</summary>
      <ul>
        {entries.map((e) => (
          <li key={`${e.at}-${e.who}`}>
            {utcTime(e.at)} {e.who}: {e.action} {JSON.stringify(e.filter)} — {e.done} of {e.matched} done
            {e.skipped > 0 ? `, ${e.skipped} skipped` : ''}
            {e.ratePerSecond !== undefined ? ` at ≤ ${e.ratePerSecond}/s` : ''}
          </li>
        ))}
      </ul>
    </details>
  );
}

import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

/** An action waiting for its confirmation: the question asked, and what it does once confirmed (its outcome as text). */
export interface Pending {
  readonly question: string;
  readonly action: () => Promise<string>;
}

/** Every action asks first, in the page (no browser dialog), then says what happened. */
export function useConfirm(): { ask: (p: Pending) => void; view: ComponentChildren } {
  const [pending, setPending] = useState<Pending | undefined>();
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | undefined>();
  const [busy, setBusy] = useState(false);
  const view = (
    <>
      {outcome && (
        <p class={outcome.ok ? 'done' : 'problem'} role="status" data-testid="action-outcome">
          {outcome.text}
        </p>
      )}
      {pending && (
        <div class="confirm" role="dialog" aria-label="confirm">
          <p>{pending.question}</p>
          <button
            type="button"
            class="danger"
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              try {
                setOutcome({ ok: true, text: await pending.action() });
              } catch (error) {
                setOutcome({ ok: false, text: error instanceof Error ? error.message : String(error) });
              } finally {
                setBusy(false);
                setPending(undefined);
              }
            }}
          >
            Confirm
          </button>
          <button type="button" onClick={() => setPending(undefined)}>
            Cancel
          </button>
        </div>
      )}
    </>
  );
  return {
    ask: (p) => {
      setOutcome(undefined);
      setPending(p);
    },
    view,
  };
}

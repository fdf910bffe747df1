import { useState } from 'preact/hooks';
import { post, readOnlyPage } from './api';
import type { Pending } from './use-confirm';
import { Problem } from './widgets';

/**
 * Completes the token a job waits for (`taskworker tokens complete`): the value as JSON (empty:
 * `null`), asked first like every action; the outcome says whether the job resumes, or why the
 * completion was refused (a second one names the first).
 */
export function TokenForm(props: { version: string; token: string; waitsUntil?: number; ask: (p: Pending) => void; reload: () => void }) {
  const [text, setText] = useState('');
  const [problem, setProblem] = useState<string | undefined>();
  return (
    <form
      class="controls filters"
      data-testid="token-form"
      onSubmit={(e) => {
        e.preventDefault();
        let value: unknown;
        try {
          value = text.trim() === '' ? undefined : JSON.parse(text);
        } catch (error) {
          setProblem(`the value is not JSON: ${error instanceof Error ? error.message : String(error)}`);
          return;
        }
        setProblem(undefined);
        props.ask({
          question: `Complete token ${props.token} with ${value === undefined ? 'null' : JSON.stringify(value)}? The job resumes at once, its wait returning that value.`,
          action: async () => {
            const r = await post('/api/token/complete', {
              version: props.version,
              token: props.token,
              ...(value !== undefined ? { value } : {}),
            });
            props.reload();
            switch (r.outcome) {
              case 'completed':
                return r.sent ? 'completed: the job resumes now' : 'completed: the job resumes with the next sweep (its send failed)';
              case 'completed-already':
                return `refused: completed already at ${new Date(r.completedAt).toISOString()}${r.value !== undefined ? ` with ${r.value}` : ''}`;
              case 'not-waiting':
                return `refused: the job no longer waits for it (${r.state})`;
              case 'unknown':
                return 'refused: no job waits for this token';
            }
          },
        });
      }}
    >
      <label>
        value (JSON){' '}
        <input
          name="value"
          size={40}
          placeholder='{"approved": true}'
          value={text}
          onInput={(e) => setText((e.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" disabled={readOnlyPage} title={readOnlyPage ? 'read-only dashboard' : undefined}>
        Complete token…
      </button>
      <Problem error={problem} />
    </form>
  );
}

/** The publish form (#/publish): a task, its JSON payload and a delay. */
import { useState } from 'preact/hooks';
import type { Meta } from '../../api-types';
import { post, readOnlyPage } from '../api';
import { useConfirm } from '../use-confirm';
import { Choice, Problem } from '../widgets';

export function PublishPage({ meta, version }: { meta: Meta; version: string }) {
  const [task, setTask] = useState(meta.tasks[0]?.name ?? '');
  const [payload, setPayload] = useState('{}');
  const [delay, setDelay] = useState('0');
  const [problem, setProblem] = useState<string | undefined>();
  const confirm = useConfirm();
  const chosen = meta.tasks.find((t) => t.name === task);
  return (
    <section>
      <h2>Publish a task</h2>
      <form
        class="publish"
        onSubmit={(e) => {
          e.preventDefault();
          let parsed: unknown;
          try {
            parsed = JSON.parse(payload);
          } catch (error) {
            setProblem(`payload is not JSON: ${error instanceof Error ? error.message : String(error)}`);
            return;
          }
          const seconds = Number(delay);
          if (!Number.isInteger(seconds) || seconds < 0) {
            setProblem(`delay ${delay}: expected whole seconds`);
            return;
          }
          setProblem(undefined);
          confirm.ask({
            question: `Publish ${task} to ${chosen?.queue ?? '?'} in version ${version}${seconds > 0 ? `, ${seconds} s from now` : ''}?`,
            action: async () => {
              const r = await post('/api/publish', {
                version,
                task,
                payload: parsed,
                delaySeconds: seconds,
              });
              return `published job ${r.jobId} to ${r.queue}`;
            },
          });
        }}
      >
        <Choice name="task" value={task} options={meta.tasks.map((t) => t.name)} onChange={setTask} />
        {chosen && (
          <p class="note">
            queue {chosen.queue} · retries {chosen.maxRetries} ·{' '}
            {chosen.validates ? 'payload checked by the task’s validate' : 'no validate'}
          </p>
        )}
        <label>
          payload (JSON)
          <textarea name="payload" rows={8} value={payload} onInput={(e) => setPayload((e.target as HTMLTextAreaElement).value)} />
        </label>
        <label>
          delay (seconds) <input name="delay" value={delay} onInput={(e) => setDelay((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={readOnlyPage}>
          Publish…
        </button>
      </form>
      <Problem error={problem} />
      {confirm.view}
    </section>
  );
}

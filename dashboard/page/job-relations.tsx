/** A job's relations as the job and flow pages show them: the jobs on each side, and messages filed under the job's id. */
import type { FiledRejection } from '../../lib/operate/rejections';
import type { RelatedJobs } from '../api-types';
import { utcTime } from './format';
import { href } from './routing';

/** The states a job does not leave: a page showing only such jobs reads them no more. */
export const ENDED: readonly string[] = ['succeeded', 'archived', 'cancelled', 'deduplicated'];

/** Messages that carried the id and never ran as that job, each kept under its own message id: apart from the job's own record. */
export function FiledRejections({ id, filed, own }: { id: string; filed: readonly FiledRejection[]; own: boolean }) {
  return (
    <div data-testid="filed-rejections">
      <h3>
        Messages that carried id {id} and never ran {own ? 'as this job' : ''}
      </h3>
      <p>Archived for their envelope, each kept under its own message id; they did not change {own ? 'this' : 'any'} job.</p>
      <ul>
        {filed.map((f) => (
          <li key={f.messageId}>
            <a href={href('job', f.messageId)}>{f.messageId}</a> · archived {utcTime(f.record.finishedAt ?? f.record.updatedAt)} ·{' '}
            <span data-testid="filed-why">{f.why}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** One side of a job's relations: each job listed as a link with its state, and the states counted. */
export function Related({ title, testid, side, note }: { title: string; testid: string; side: RelatedJobs; note?: string }) {
  const counted = Object.entries(side.counts)
    .map(([state, n]) => `${n} ${state}`)
    .join(' · ');
  return (
    <>
      <h3>{title}</h3>
      <p class="note" data-testid={`${testid}-counts`}>
        {side.total} job(s): {counted}
        {side.read < side.total ? ` (states of the first ${side.read})` : ''}
        {note ? ` · ${note}` : ''}
      </p>
      <ul class="related" data-testid={testid}>
        {side.jobs.map((j) => (
          <li key={j.jobId} data-job={j.jobId}>
            <a href={href('job', j.jobId)}>{j.jobId}</a> <span class={`badge state-${j.state}`}>{j.state}</span>
            {j.reason ? ` (${j.reason})` : ''}
            {j.task ? ` · ${j.task}` : ''}
          </li>
        ))}
        {side.total > side.jobs.length && <li class="note">… {side.total - side.jobs.length} more</li>}
      </ul>
    </>
  );
}

/** A job's page (#/job/ID): its record, relations, actions (retry, run now, cancel), payload, result, error and history. */
import type { JobRecord } from '../../api-types';
import { get, post } from '../api';
import { errorText, exactDuration, jobRunMs, jobWaitMs, pretty, utcTime } from '../format';
import { ENDED, FiledRejections, Related } from '../job-relations';
import { href } from '../routing';
import { TokenForm } from '../token-form';
import { useConfirm } from '../use-confirm';
import { REFRESH_MS, useData } from '../use-data';
import { ActionButton, Problem } from '../widgets';

/** The states a job is parked in until its time: it can be run now, or cancelled. */
const PARKED = ['scheduled', 'sleeping', 'waiting-token', 'waiting-event', 'waiting-key'];

/** A sleep's or a token wait's step: its time, and how the wait ended (or what it waits for). */
function stepWait(job: JobRecord, step: NonNullable<JobRecord['steps']>[number]): string {
  const wait = step.wait;
  if (!wait) return '';
  if (wait.kind === 'sleep') return `sleep until ${utcTime(wait.until)}`;
  if (wait.kind === 'continue') return 'continued in a new invocation';
  const what = wait.kind === 'event' ? `event ${wait.event}` : 'token';
  if (step.completedAt !== undefined) return `${what} ${wait.kind === 'event' ? 'received' : 'completed'} ${utcTime(step.completedAt)}`;
  if (job.waitToken === wait.token && job.state === 'waiting-token') return `waits for its token until ${utcTime(wait.until)}`;
  if (job.waitToken === wait.token && job.state === 'waiting-event') return `waits for ${what} until ${utcTime(wait.until)}`;
  return job.waitToken === wait.token ? `${what} timed out ${utcTime(wait.until)}` : `${what} kept, not yet waited for`;
}

export function JobPage({ version, id }: { version: string; id: string }) {
  const { data, error, reload } = useData(
    () => get('/api/job', { version, id }),
    [version, id],
    REFRESH_MS,
    // A finished job does not change (nor do its relations once they have all ended); an archived
    // one is looked up in the archive, a walk not to repeat.
    (view) =>
      view.job !== undefined &&
      ENDED.includes(view.job.state) &&
      [view.relations?.dependencies, view.relations?.dependents].every(
        (side) => !side || Object.keys(side.counts).every((state) => ENDED.includes(state)),
      ),
  );
  const confirm = useConfirm();
  if (!data) return <Problem error={error ?? 'loading…'} />;
  const filed = data.filedUnderMessageIds ?? [];
  if (!data.job)
    return (
      <section>
        <h2>
          Job <span data-testid="job-id">{id}</span>
        </h2>
        <Problem error={error} />
        <p data-testid="no-own-record">No job {id} of its own in this version.</p>
        <FiledRejections id={id} filed={filed} own={false} />
      </section>
    );
  const job: JobRecord = data.job;
  let envelope: { payload?: unknown; appData?: unknown } | undefined;
  try {
    envelope = data.archived ? (JSON.parse(data.archived.body) as typeof envelope) : undefined;
  } catch {
    envelope = undefined;
  }
  return (
    <section>
      <h2>
        Job <span data-testid="job-id">{job.jobId}</span> <span class={`badge state-${job.state}`}>{job.state}</span>
      </h2>
      <Problem error={error} />
      <dl class="fields">
        <dt>task</dt>
        <dd>{job.task}</dd>
        <dt>queue</dt>
        <dd>
          <a href={href('queue', job.queue)}>{job.queue}</a>
        </dd>
        {job.event && (
          <>
            <dt>event</dt>
            <dd data-testid="event">
              <a href={href('events')} data-field="event-name">
                {job.event.name}
              </a>{' '}
              <span data-field="event-id">{job.event.id}</span>
              {job.event.source !== undefined && (
                <>
                  {' '}
                  from <span data-field="event-source">{job.event.source}</span>
                </>
              )}
              , emitted <span data-field="event-emitted">{utcTime(job.event.emittedAt)}</span>
            </dd>
          </>
        )}
        <dt>attempts</dt>
        <dd>{job.attempt}</dd>
        {job.reason && (
          <>
            <dt>reason</dt>
            <dd>{job.reason}</dd>
          </>
        )}
        <dt>published</dt>
        <dd>{utcTime(job.publishedAt)}</dd>
        {job.runAt !== undefined && (
          <>
            <dt>due</dt>
            <dd>{utcTime(job.runAt)}</dd>
          </>
        )}
        {job.startBy !== undefined && (
          <>
            <dt>expires</dt>
            <dd title="no attempt starts after it">{utcTime(job.startBy)}</dd>
          </>
        )}
        <dt>first started</dt>
        <dd>{utcTime(job.firstStartedAt)}</dd>
        <dt>finished</dt>
        <dd>{utcTime(job.finishedAt)}</dd>
        {jobWaitMs(job) !== undefined && (
          <>
            <dt>waited</dt>
            <dd data-testid="waited">{exactDuration(jobWaitMs(job))} (publish → first start)</dd>
          </>
        )}
        {jobRunMs(job) !== undefined && (
          <>
            <dt>ran</dt>
            <dd data-testid="ran">
              {exactDuration(jobRunMs(job))} (attempt {job.attempt}: start → {job.state === 'retrying' ? 'failed' : 'end'})
            </dd>
          </>
        )}
        {job.cancelRequestedAt !== undefined && (
          <>
            <dt>cancel asked</dt>
            <dd data-testid="cancel-requested">{utcTime(job.cancelRequestedAt)}</dd>
          </>
        )}
        {job.progress !== undefined && (
          <>
            <dt>progress</dt>
            <dd>
              <code data-testid="progress">{job.progress}</code> · at {utcTime(job.progressAt)}
            </dd>
          </>
        )}
        {job.envelopeId && (
          <>
            <dt>id it carried</dt>
            <dd>{job.envelopeId}</dd>
          </>
        )}
        {job.tags && job.tags.length > 0 && (
          <>
            <dt>tags</dt>
            <dd data-testid="tags">
              {job.tags.map((t) => (
                <a key={t} class="chip" href={href('jobs', undefined, { tag: t })}>
                  {t}
                </a>
              ))}
            </dd>
          </>
        )}
        {job.key !== undefined && (
          <>
            <dt>key</dt>
            <dd data-testid="key">
              <a href={href('key', job.task, { key: job.key })}>{job.key}</a>
              {job.seq !== undefined ? ` · #${job.seq} in its order` : ''}
            </dd>
          </>
        )}
        {job.duplicateOf !== undefined && (
          <>
            <dt>joined</dt>
            <dd data-testid="duplicate-of">
              <a href={href('job', job.duplicateOf)}>{job.duplicateOf}</a> (same task and key; this job never ran)
            </dd>
          </>
        )}
        {job.memberOf && (
          <>
            <dt>member of</dt>
            <dd>
              {job.memberOf.index + 1} of {job.memberOf.size} of fan-in <a href={href('job', job.memberOf.id)}>{job.memberOf.id}</a>
            </dd>
          </>
        )}
      </dl>
      {data.relations && (
        <>
          {data.relations.dependencies && (
            <Related
              title={job.awaits !== undefined ? `Awaits (fan-in of ${job.awaits})` : 'Waits for'}
              testid="dependencies"
              side={data.relations.dependencies}
              note={`on a failure: ${job.onDependencyFailure ?? 'fail'}${
                data.relations.dependencies.firstFailure !== undefined
                  ? ` · ${data.relations.dependencies.firstFailure} did not succeed`
                  : data.relations.dependencies.complete
                    ? ' · all ended'
                    : ''
              }`}
            />
          )}
          {data.relations.dependents && <Related title="Dependents" testid="dependents" side={data.relations.dependents} />}
          <p>
            <a href={href('flow', job.jobId)} data-testid="flow-link">
              Flow view
            </a>
          </p>
        </>
      )}
      {job.state === 'archived' &&
        (data.archived ? (
          <ActionButton
            label="Retry"
            onClick={() =>
              confirm.ask({
                question: `Retry job ${job.jobId}? Its archived message goes back to ${job.queue} with its attempts reset (archive replay of this job).`,
                action: async () => {
                  const r = await post('/api/job/retry', { version, id: job.jobId });
                  reload();
                  return r.outcome === 'retried'
                    ? `sent back to ${r.queue}, attempts reset`
                    : r.outcome === 'skipped'
                      ? `not retried: ${r.why}`
                      : r.outcome === 'not-in-archive'
                        ? 'not retried: its message is no longer in the archive (replayed already, or past its retention)'
                        : `not retried: ${r.outcome}${'record' in r ? ` (${r.record.state})` : ''}`;
                },
              })
            }
          />
        ) : (
          <p class="note" data-testid="not-retryable">
            {job.reason === 'dependency-failed'
              ? 'Archived because a dependency failed: retrying that dependency (from its page) makes this job wait again.'
              : 'Its message is not in the archive (replayed already, or past the archive’s retention): nothing to retry here.'}
          </p>
        ))}
      {job.state === 'waiting-token' && job.waitToken !== undefined && (
        <TokenForm version={version} token={job.waitToken} ask={confirm.ask} reload={reload} />
      )}
      {PARKED.includes(job.state) &&
        (job.announced ? (
          <p class="note" data-testid="not-runnable-now">
            Delayed in SQS until {utcTime(job.runAt)} (published with a delay of 15 minutes or less): SQS cannot bring a delayed message
            forward, so it runs then; it can be cancelled.
          </p>
        ) : (
          <ActionButton
            label="Run now"
            onClick={() =>
              confirm.ask({
                question:
                  job.state === 'sleeping'
                    ? `Wake job ${job.jobId} now instead of at ${utcTime(job.runAt)}? Its sleep ends and it goes on at once, on ${job.queue}.`
                    : job.state === 'waiting-token'
                      ? `Run job ${job.jobId} now, ending its wait as if timed out (the wait returns null)?`
                      : `Run job ${job.jobId} now instead of at ${utcTime(job.runAt)}? It is sent to ${job.queue} at once.`,
                action: async () => {
                  const r = await post('/api/job/run-now', { version, id: job.jobId });
                  reload();
                  switch (r.outcome) {
                    case 'sent':
                      return `sent to ${r.queue} now`;
                    case 'due':
                      return 'due now: the send failed, the next sweep sends it (within a minute)';
                    case 'sweeping':
                      return 'not run now: a sweep is sending it for its due time (15 minutes away or nearer)';
                    case 'announced':
                      return 'not run now: its message is delayed in SQS, which cannot bring it forward';
                    case 'not-scheduled':
                      return `not run now: it is ${r.record.state}`;
                    case 'unknown':
                      return 'not run now: no such job';
                  }
                },
              })
            }
          />
        ))}
      {(PARKED.includes(job.state) || job.state === 'waiting' || (job.state === 'running' && job.cancelRequestedAt === undefined)) && (
        <ActionButton
          label="Cancel job"
          onClick={() =>
            confirm.ask({
              question:
                job.state === 'running'
                  ? `Cancel running job ${job.jobId}? Its signal fires within a second or two and it ends cancelled (no retry)${data.relations?.dependents ? '; the jobs waiting for it count it as failed' : ''}.`
                  : `Cancel job ${job.jobId}? It will not run${data.relations?.dependents ? '; the jobs waiting for it count it as failed' : ''}.`,
              action: async () => {
                const r = await post('/api/job/cancel', { version, id: job.jobId });
                reload();
                return r.outcome === 'cancelled'
                  ? 'cancelled'
                  : r.outcome === 'requested'
                    ? 'asked it to stop; it ends cancelled within a few seconds'
                    : `not cancelled: ${r.outcome}${'record' in r ? ` (${r.record.state})` : ''}`;
              },
            })
          }
        />
      )}
      {data.relations?.dependents && (
        <ActionButton
          label="Cancel with its dependents"
          onClick={() =>
            confirm.ask({
              question: `Cancel job ${job.jobId} and every job waiting for it, transitively? Those already running or ended are left.`,
              action: async () => {
                const r = await post('/api/flow/cancel', { version, id: job.jobId });
                reload();
                return `cancelled ${r.cancelled.length} job(s)${r.notCancelled.length > 0 ? `; not cancelled: ${r.notCancelled.map((n) => `${n.jobId} (${n.state})`).join(', ')}` : ''}`;
              },
            })
          }
        />
      )}
      {confirm.view}
      <h3>Payload</h3>
      {envelope ? (
        <pre data-testid="payload">{JSON.stringify(envelope.payload, null, 2)}</pre>
      ) : job.payload !== undefined ? (
        <pre data-testid="payload">{pretty(job.payload)}</pre>
      ) : (
        <p class="note" data-testid="payload-not-kept">
          Not kept: the jobs table keeps payloads up to tracking.keepPayloadBytes from the job's first claim (this one was larger, not
          claimed yet, or kept none); an archived job's is shown from its archive message.
        </p>
      )}
      {envelope?.appData !== undefined && (
        <>
          <h3>appData</h3>
          <pre>{JSON.stringify(envelope.appData, null, 2)}</pre>
        </>
      )}
      {job.result !== undefined && (
        <>
          <h3>Result</h3>
          {job.resultRef && (
            <p class="hint" data-testid="result-kept">
              {job.resultRef.bytes.toLocaleString()} bytes of JSON, kept in s3://{job.resultRef.bucket}/{job.resultRef.key}
            </p>
          )}
          <pre data-testid="result">{pretty(job.result)}</pre>
        </>
      )}
      {job.result === undefined && job.resultBytes !== undefined && (
        <>
          <h3>Result</h3>
          <p class="hint" data-testid="result-unread">
            {job.resultRef
              ? `${job.resultRef.bytes.toLocaleString()} bytes of JSON, kept in s3://${job.resultRef.bucket}/${job.resultRef.key}, not shown: ${data.resultUnread ?? 'not read'}. taskworker jobs wait ${job.jobId} --json prints it.`
              : `${job.resultBytes.toLocaleString()} bytes of JSON: too large to keep, not stored.`}
          </p>
        </>
      )}
      {job.lastError && (
        <>
          <h3>Error</h3>
          <pre class="error" data-testid="error">
            {errorText(job.lastError)}
          </pre>
        </>
      )}
      {job.steps && job.steps.length > 0 && (
        <>
          <h3>Steps</h3>
          <table class="grid steps" data-testid="steps">
            <thead>
              <tr>
                <th>#</th>
                <th>step</th>
                <th>attempt</th>
                <th>kept</th>
                <th>wait</th>
                <th>result</th>
              </tr>
            </thead>
            <tbody>
              {job.steps.map((s, i) => (
                <tr key={s.name}>
                  <td class="num">{i + 1}</td>
                  <td>{s.name}</td>
                  <td class="num">{s.attempt}</td>
                  <td>{utcTime(s.at)}</td>
                  <td data-field="wait">{stepWait(job, s)}</td>
                  <td>
                    <code>{s.result ?? ''}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <h3>History</h3>
      <ol class="timeline">
        {job.history.map((h, i) => (
          <li key={i}>
            <time>{utcTime(h.when)}</time> <strong>{h.what}</strong>
            {h.attempt !== undefined ? ` · attempt ${h.attempt}` : ''}
            {h.worker ? ` · ${h.worker}` : ''}
            {h.detail ? ` · ${h.detail}` : ''}
          </li>
        ))}
      </ol>
      <JobLogLines key={`${version} ${job.jobId}`} version={version} id={job.jobId} />
      {filed.length > 0 && <FiledRejections id={id} filed={filed} own={true} />}
    </section>
  );
}

/** How often a live job's log lines are read again (locally a read of dev's log file; on AWS a Logs Insights query, billed by what it scans). */
const LOGS_REFRESH_MS = 2_000;

/** The job's log lines (`taskworker jobs logs`): its body's and the dispatcher's, oldest first, read again until the job has ended. */
function JobLogLines({ version, id }: { version: string; id: string }) {
  const { data, error } = useData(
    () => get('/api/job/logs', { version, id }),
    [version, id],
    LOGS_REFRESH_MS,
    (logs) => logs.ended,
  );
  return (
    <>
      <h3>Logs</h3>
      {error && (
        <p class="note" data-testid="logs-unavailable">
          {error}
        </p>
      )}
      {data && (
        <>
          <p class="hint">
            from {data.where}, {utcTime(data.from)} to {utcTime(data.to)}
            {data.ended ? '' : ' (read again every 2 s until the job ends)'}
          </p>
          {data.lines.length === 0 ? (
            <p data-testid="no-log-lines">No lines{data.ended ? '.' : ' yet.'}</p>
          ) : (
            <table class="grid" data-testid="log-lines">
              <tbody>
                {data.lines.map((line, i) => (
                  <tr key={i} class={`log-${line.level}`}>
                    <td>{line.time.replace('T', ' ').replace('Z', ' UTC')}</td>
                    <td>{line.source === 'task' ? `attempt ${line.attempt ?? '?'}` : 'dispatcher'}</td>
                    <td>{line.level}</td>
                    <td data-field="message">
                      {line.message}
                      {Object.keys(line.fields).length > 0 && <code> {JSON.stringify(line.fields)}</code>}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </>
  );
}

/** The jobs list (#/jobs): a tab per state with its count, filters by queue, task and tag, a page of jobs at a time. */
import { useEffect, useState } from 'preact/hooks';
import { CANCELLABLE_STATES } from '../../../lib/operate/answers';
import type { Meta, StateCount } from '../../api-types';
import { get } from '../api';
import { BulkButton } from '../bulk-action';
import { exactDuration, jobRunMs, jobWaitMs, utcTime } from '../format';
import { href } from '../routing';
import { useConfirm } from '../use-confirm';
import { REFRESH_MS, useData } from '../use-data';
import { Choice, Problem } from '../widgets';

/** What a tab is called: the state, and for two what bull-board and Flower call them. */
const TAB_LABELS: Readonly<Record<string, string>> = {
  scheduled: 'scheduled (delayed)',
  waiting: 'waiting (on dependencies)',
};

/** How often the tabs' counts are read again (an index count reads up to its cap of jobs per queue). */
const COUNTS_REFRESH_MS = 15_000;

/** A tab's count as text: `today` counts are the day's, an `index` or `workers` count that stopped short is "at least". */
function countText(c: StateCount | undefined): string {
  if (!c) return '…';
  if (c.count === null) return '?';
  return `${c.count}${c.atLeast ? '+' : ''}${c.source === 'today' ? ' today' : ''}`;
}

function countTitle(c: StateCount | undefined, cap: number): string {
  if (!c) return '';
  switch (c.source) {
    case 'queue':
      return 'messages visible in the queues (SQS, approximate)';
    case 'workers':
      return "held by the live dispatchers at their last beat (every 15 s), confirmed running; '+': more than their beats could name";
    case 'today':
      return 'succeeded today (UTC), from the stats table: counting every succeeded job would read each one';
    case 'index':
      return `from the index, read up to ${cap} per queue ('+': more than that)`;
  }
}

/** Every state as a tab with its count, each counted without a scan (the title says from what). */
function StateTabs(props: { version: string; state: string; queue: string; states: readonly string[]; go: (state: string) => void }) {
  const { data: counts } = useData(
    () => get('/api/jobs/counts', { version: props.version, queue: props.queue }),
    [props.version, props.queue],
    COUNTS_REFRESH_MS,
  );
  return (
    <nav class="tabs" data-testid="state-tabs">
      {props.states.map((s) => {
        const c = counts?.states.find((x) => x.state === s);
        return (
          <a
            key={s}
            href={href('jobs', undefined, { state: s, queue: props.queue })}
            class={s === props.state ? 'current' : ''}
            data-state={s}
            title={countTitle(c, counts?.cap ?? 0)}
            onClick={(e) => {
              e.preventDefault();
              props.go(s);
            }}
          >
            {TAB_LABELS[s] ?? s}{' '}
            <span class="count" data-count>
              {countText(c)}
            </span>
          </a>
        );
      })}
    </nav>
  );
}

export function JobsPageView({ meta, version, params }: { meta: Meta; version: string; params: URLSearchParams }) {
  const state = params.get('state') ?? 'archived';
  const queue = params.get('queue') ?? '';
  const task = params.get('task') ?? '';
  const tag = params.get('tag') ?? '';
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const { data: page, error } = useData(
    () => get('/api/jobs', tag ? { version, tag, limit: 25, cursor } : { version, state, queue, task, limit: 25, cursor }),
    [version, state, queue, task, tag, cursor],
    REFRESH_MS * 2,
    // A scan reads the whole table's worth of capacity: once, not every few seconds.
    (p) => p.scanned === true,
  );
  const confirm = useConfirm();
  const [find, setFind] = useState('');
  const [tagInput, setTagInput] = useState(tag);
  useEffect(() => setTagInput(tag), [tag]);
  const go = (patch: Record<string, string>) => {
    setCursors([]);
    location.hash = href('jobs', undefined, { state, queue, task, tag, ...patch });
  };
  return (
    <section>
      <h2>Jobs</h2>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          if (find.trim()) location.hash = href('job', find.trim());
        }}
      >
        <label>
          Find by id <input name="job-id" value={find} onInput={(e) => setFind((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Open</button>
      </form>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          go({ tag: tagInput.trim() });
        }}
      >
        <label>
          Tag <input name="tag" value={tagInput} onInput={(e) => setTagInput((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" name="filter-tag">
          Filter
        </button>
        {tag && (
          <>
            <span class="note" data-testid="tag-filter">
              jobs tagged {tag}, in every state, newest first
            </span>{' '}
            <button type="button" onClick={() => go({ tag: '' })}>
              Clear tag
            </button>
          </>
        )}
      </form>
      {!tag && <StateTabs version={version} state={state} queue={queue} states={meta.states} go={(s) => go({ state: s })} />}
      <div class="filters">
        {!tag && (
          <>
            <Choice name="queue" value={queue} options={meta.queues.map((q) => q.name)} all onChange={(v) => go({ queue: v })} />
            <Choice name="task" value={task} options={meta.tasks.map((t) => t.name)} all onChange={(v) => go({ task: v })} />
            {task && <span class="note">the tabs count every task of {queue || 'every queue'}</span>}
          </>
        )}
        {page?.scanned && (
          <span class="note" data-testid="scanned">
            {state}: the first {page.jobs.length} a scan of the jobs table found, not necessarily the newest (
            {state === 'succeeded'
              ? 'a queue shown has listSucceeded off: its successes carry no index key'
              : `${state} jobs have no index: one would cost an index write on every job`}
            ; retrying, archived, scheduled, waiting, cancelled and succeeded are listed newest first from an index, running from the live
            workers); not refreshed
          </span>
        )}
        {(tag || (CANCELLABLE_STATES as readonly string[]).includes(state)) && (
          <BulkButton
            version={version}
            action="cancel"
            label="Cancel all matching…"
            filter={tag ? { tag } : { state, queue, task }}
            confirm={confirm}
            done={() => setCursors([])}
          />
        )}
        {page?.fromWorkers && (
          <span class="note" data-testid="from-workers">
            running: {page.fromWorkers.running} held by the live dispatchers at their last beat (every 15 s), confirmed running now, newest
            start first; a job started since its dispatcher's last beat shows at the next
            {page.fromWorkers.uncarried > 0 ? `; ${page.fromWorkers.uncarried} more held that the beats had no room to name` : ''}
          </span>
        )}
      </div>
      {confirm.view}
      <Problem error={error} />
      {page && (
        <>
          <table class="grid" data-testid="jobs">
            <thead>
              <tr>
                <th>job</th>
                <th>task</th>
                <th>queue</th>
                <th>state</th>
                <th>attempt</th>
                <th>reason</th>
                <th>updated</th>
                <th>due</th>
                <th title="publish → first start, as measured">waited</th>
                <th title="the last attempt's start → end, as measured">ran</th>
              </tr>
            </thead>
            <tbody>
              {page.jobs.map((j) => (
                <tr key={j.jobId} data-job={j.jobId}>
                  <td>
                    <a href={href('job', j.jobId)}>{j.jobId}</a>
                  </td>
                  <td>{j.task}</td>
                  <td>{j.queue}</td>
                  <td>{j.state}</td>
                  <td class="num">{j.attempt}</td>
                  <td>{j.reason ?? ''}</td>
                  <td>{utcTime(j.updatedAt)}</td>
                  <td>{j.runAt !== undefined ? utcTime(j.runAt) : ''}</td>
                  <td class="num" data-field="waited">
                    {jobWaitMs(j) === undefined ? '' : exactDuration(jobWaitMs(j))}
                  </td>
                  <td class="num" data-field="ran">
                    {jobRunMs(j) === undefined ? '' : exactDuration(jobRunMs(j))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {page.jobs.length === 0 && <p>{tag ? `No jobs tagged ${tag}.` : `No ${state} jobs.`}</p>}
          <p>
            {cursors.length > 0 && (
              <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>
                Newer
              </button>
            )}
            {page.next && (
              <button type="button" onClick={() => setCursors([...cursors, page.next as string])}>
                Older
              </button>
            )}
          </p>
        </>
      )}
    </section>
  );
}

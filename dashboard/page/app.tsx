/**
 * The dashboard page: hash routes (#/, #/queue/NAME, #/jobs, #/job/ID, #/flow/ID, #/key/TASK?key=K, #/workers, #/events, #/archive, #/publish) over
 * the server's JSON API. Everything that comes from job data is set as text (Preact escapes it);
 * nothing here sets HTML. This file is the shell (header, version picker, the route to its page);
 * each page is a file of pages/.
 */
import type { ComponentChildren } from 'preact';
import { render } from 'preact';
import { useState } from 'preact/hooks';
import { get } from './api';
import { ArchivePage } from './pages/archive-page';
import { EventsPage } from './pages/events-page';
import { FlowPage } from './pages/flow-page';
import { JobPage } from './pages/job-page';
import { JobsPageView } from './pages/jobs-page';
import { KeyPage } from './pages/key-page';
import { Overview } from './pages/overview-page';
import { PublishPage } from './pages/publish-page';
import { QueuePage } from './pages/queue-page';
import { WorkersPage } from './pages/workers-page';
import { href, useRoute } from './routing';
import { useData } from './use-data';
import { Problem } from './widgets';

function App() {
  const route = useRoute();
  const [version, setVersion] = useState<string | undefined>(new URLSearchParams(location.search).get('version') ?? undefined);
  const { data: meta, error } = useData(() => get('/api/meta', { version }), [version]);
  if (!meta) return <Problem error={error ?? 'loading…'} />;
  const v = meta.version;
  let page: ComponentChildren;
  switch (route.page) {
    case 'queue':
      page = <QueuePage meta={meta} version={v} name={route.arg} />;
      break;
    case 'jobs':
      page = <JobsPageView meta={meta} version={v} params={route.params} />;
      break;
    case 'job':
      page = <JobPage version={v} id={route.arg} />;
      break;
    case 'flow':
      page = <FlowPage version={v} id={route.arg} />;
      break;
    case 'key':
      page = <KeyPage version={v} task={route.arg} keyName={route.params.get('key') ?? ''} />;
      break;
    case 'archive':
      page = <ArchivePage meta={meta} version={v} params={route.params} />;
      break;
    case 'workers':
      page = <WorkersPage version={v} />;
      break;
    case 'events':
      page = <EventsPage version={v} />;
      break;
    case 'publish':
      page = <PublishPage meta={meta} version={v} />;
      break;
    default:
      page = <Overview meta={meta} version={v} />;
  }
  const nav = [
    ['', 'Overview'],
    ['jobs', 'Jobs'],
    ['workers', 'Workers'],
    ['events', 'Events'],
    ['archive', 'Archive'],
    ['publish', 'Publish'],
  ] as const;
  return (
    <>
      <header>
        <h1>taskworker · {meta.app}</h1>
        <nav>
          {nav.map(([p, label]) => (
            <a key={p} href={href(p)} class={route.page === p ? 'current' : ''}>
              {label}
            </a>
          ))}
        </nav>
        <label class="version">
          version{' '}
          <select
            name="version"
            value={v}
            onChange={(e) => {
              const next = (e.target as HTMLSelectElement).value;
              history.replaceState(null, '', `?version=${encodeURIComponent(next)}${location.hash}`);
              setVersion(next);
            }}
          >
            {meta.versions.map((name) => (
              <option key={name}>{name}</option>
            ))}
          </select>
        </label>
        {meta.readOnly && <span class="badge">read-only</span>}
        <span class="badge">{meta.local ? 'local (taskworker dev)' : 'AWS'}</span>
      </header>
      <main>{page}</main>
    </>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);

/** The dashboard server's JSON API, as the page calls it. */
import type { ArchivedMessage, JobsPage, ReplayResult, VersionStatus } from '../../lib/operate/operator';
import type { JobRecord, QueueDayStats } from '../../lib/track/model';

export interface Meta {
  readonly app: string;
  readonly version: string;
  readonly versions: readonly string[];
  readonly readOnly: boolean;
  readonly local: boolean;
  readonly states: readonly string[];
  readonly reasons: readonly string[];
  readonly queues: ReadonlyArray<{ name: string; priority: number; slaSeconds: number; tracking: string; maxReceiveCount: number }>;
  readonly tasks: ReadonlyArray<{ name: string; queue: string; maxRetries: number; validates: boolean }>;
}

export interface Status extends VersionStatus {
  readonly now: number;
  readonly localDispatchers?: { pid: number; alive: number; died: number };
  readonly invocations?:
    | { functionName: string; minutes: number; invocations: number; errors: number; maxConcurrent: number; unavailable?: never }
    | { unavailable: string };
}

export interface JobView {
  readonly job: JobRecord;
  readonly archived?: ArchivedMessage;
}

export type { ArchivedMessage, JobRecord, JobsPage, QueueDayStats, ReplayResult };

/** An answer other than 2xx: the server's one-sentence reason. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const token = document.querySelector('meta[name="taskworker-token"]')?.getAttribute('content') ?? '';
export const readOnlyPage = document.querySelector('meta[name="taskworker-mode"]')?.getAttribute('content') === 'read-only';

function query(params: Record<string, string | number | undefined>): string {
  const entries = Object.entries(params).filter((e): e is [string, string | number] => e[1] !== undefined && e[1] !== '');
  return entries.length === 0 ? '' : `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}`;
}

async function answer<T>(response: Response): Promise<T> {
  const body = (await response.json().catch(() => ({ error: `HTTP ${response.status}` }))) as T & { error?: string };
  if (!response.ok) throw new ApiError(body.error ?? `HTTP ${response.status}`, response.status);
  return body;
}

export function get<T>(path: string, params: Record<string, string | number | undefined> = {}): Promise<T> {
  return fetch(`${path}${query(params)}`, { headers: { accept: 'application/json' } }).then((r) => answer<T>(r));
}

export function post<T>(path: string, body: Record<string, unknown>): Promise<T> {
  return fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-taskworker-token': token },
    body: JSON.stringify(body),
  }).then((r) => answer<T>(r));
}

/** The page's side of the dashboard's JSON API: each route asked by its path in the shared table, answered with its type. */
import { type ApiPath, type ApiRequest, type ApiResponse, type GetPath, PAGE_META, type PostPath, TOKEN_HEADER } from '../api-types';

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

const token = document.querySelector(`meta[name="${PAGE_META.token}"]`)?.getAttribute('content') ?? '';
export const readOnlyPage = document.querySelector(`meta[name="${PAGE_META.mode}"]`)?.getAttribute('content') === 'read-only';

function query(params: Readonly<Record<string, string | number | undefined>>): string {
  const entries = Object.entries(params).filter((e): e is [string, string | number] => e[1] !== undefined && e[1] !== '');
  return entries.length === 0 ? '' : `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}`;
}

function errorOf(body: unknown): string | undefined {
  const error = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  return typeof error === 'string' ? error : undefined;
}

async function answer<P extends ApiPath>(response: Response): Promise<ApiResponse<P>> {
  const body: unknown = await response.json().catch(() => undefined);
  if (!response.ok) throw new ApiError(errorOf(body) ?? `HTTP ${response.status}`, response.status);
  // The one place the page trusts the wire: tsc holds the server's answer to this type, and the
  // route test holds its JSON to the same table.
  return body as ApiResponse<P>;
}

/** Reads a GET route of the shared table; empty and undefined query values are left out. */
export function get<P extends GetPath>(path: P, params: ApiRequest<P>): Promise<ApiResponse<P>> {
  return fetch(`${path}${query(params)}`, { headers: { accept: 'application/json' } }).then((r) => answer<P>(r));
}

/** Sends a POST route of the shared table (an action): the token in its header, the request as JSON. */
export function post<P extends PostPath>(path: P, body: ApiRequest<P>): Promise<ApiResponse<P>> {
  return fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [TOKEN_HEADER]: token },
    body: JSON.stringify(body),
  }).then((r) => answer<P>(r));
}

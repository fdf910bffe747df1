/** How the dashboard's server reads a request's values: each checked, a bad one refused with a {@link RequestError} naming it. */
import { TaskworkerError } from '../../lib/errors';
import type { ArchiveFilter } from '../../lib/operate/archive';
import { ARCHIVE_REASONS, type ArchiveReason } from '../../lib/wire/archive-reasons';

/** A request the server refuses with a 4xx and one sentence naming the bad value. */
export class RequestError extends TaskworkerError {
  constructor(
    message: string,
    readonly status: 400 | 403 | 404 = 400,
  ) {
    super(message);
    this.name = 'RequestError';
  }
}

export function integerParam(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new RequestError(`${name} ${text}: expected an integer ${min}..${max}`);
  return value;
}

function reasonParam(text: unknown): ArchiveReason | undefined {
  if (text === undefined || text === '' || text === null) return undefined;
  if (typeof text !== 'string' || !(ARCHIVE_REASONS as readonly string[]).includes(text))
    throw new RequestError(`reason ${JSON.stringify(text)}: expected one of ${ARCHIVE_REASONS.join(', ')}`);
  return text as ArchiveReason;
}

export function stringParam(name: string, value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new RequestError(`${name}: expected a string, got ${JSON.stringify(value)}`);
  return value;
}

export function archiveFilter(source: { readonly reason?: unknown; readonly task?: unknown }): ArchiveFilter {
  const reason = reasonParam(source.reason);
  const task = stringParam('task', source.task);
  return { ...(reason ? { reason } : {}), ...(task ? { task } : {}) };
}

/**
 * The message attribute taskworker puts on a message it sends for a job it recorded first (a
 * parked job swept to its queue, a released dependent, a fresh copy near the redrive limit, a
 * publish with a `queued` record, a replay): the claim then expects the record and skips the
 * write that would create one (lib/dispatch/claim.ts). Its value is `1`; only its presence counts.
 */
export const RECORDED_ATTRIBUTE = 'taskworker-recorded';

/** A message's attributes with the mark added. */
export function markedRecorded(attributes: Readonly<Record<string, string>> | undefined): Record<string, string> {
  return { ...attributes, [RECORDED_ATTRIBUTE]: '1' };
}

import { bodyBytes, messageBytes, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import type { SendEntry } from '../ports';
import { ARCHIVE_REASONS } from './archive-reasons';
import type { ArchiveRecord } from './archive-record-shape';

export type { ArchiveRecord } from './archive-record-shape';

export const ARCHIVE_RECORD_ATTRIBUTE = 'taskworker-archive';
export const ARCHIVE_REASON_ATTRIBUTE = 'taskworker-reason';

/**
 * The archive send for one message: its original body, untouched, and the record as message
 * attributes. If body and record would pass SQS's limit, the stack and then the detail are cut;
 * if even that does not fit (a body within a few hundred bytes of 1 MiB), the body's end is cut
 * and the record says so (`bodyTruncatedFrom`): a message is never refused by the archive.
 */
export function archiveEntry(id: string, body: string, record: ArchiveRecord): SendEntry {
  const attributes = (r: ArchiveRecord) => ({ [ARCHIVE_RECORD_ATTRIBUTE]: JSON.stringify(r), [ARCHIVE_REASON_ATTRIBUTE]: r.reason });
  const { errorStack: _dropped, ...withoutStack } = record;
  const shortDetail: ArchiveRecord = { ...withoutStack, detail: record.detail.slice(0, 200) };
  for (const fitted of [record, withoutStack, shortDetail]) {
    if (messageBytes(body, attributes(fitted)) <= SQS_MESSAGE_LIMIT_BYTES) return { id, body, attributes: attributes(fitted) };
  }
  const truncated: ArchiveRecord = { ...shortDetail, bodyTruncatedFrom: bodyBytes(body) };
  const room = SQS_MESSAGE_LIMIT_BYTES - messageBytes('', attributes(truncated));
  return { id, body: utf8Prefix(body, room), attributes: attributes(truncated) };
}

/** The longest prefix of `text` whose UTF-8 encoding fits `maxBytes`, never cutting a character. */
function utf8Prefix(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  let cut = Math.max(0, Math.min(maxBytes, bytes.length));
  // Step back over continuation bytes (10xxxxxx) so the cut falls between characters.
  while (cut > 0 && cut < bytes.length && ((bytes[cut] as number) & 0xc0) === 0x80) cut -= 1;
  return bytes.toString('utf8', 0, cut);
}

/** Reads the record back from an archived message's attributes; undefined if it is not one. */
export function readArchiveRecord(attributes: Readonly<Record<string, string>>): ArchiveRecord | undefined {
  const json = attributes[ARCHIVE_RECORD_ATTRIBUTE];
  if (json === undefined) return undefined;
  try {
    const record = JSON.parse(json) as ArchiveRecord;
    return (ARCHIVE_REASONS as readonly string[]).includes(record.reason) ? record : undefined;
  } catch {
    return undefined;
  }
}

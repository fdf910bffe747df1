import { bodyBytes, messageBytes, SQS_MESSAGE_LIMIT_BYTES } from '../../lib/layout/sqs-limits';
import { ARCHIVE_REASON_ATTRIBUTE, type ArchiveRecord, archiveEntry, readArchiveRecord } from '../../lib/wire/archive-record';

const record: ArchiveRecord = {
  reason: 'exhausted',
  detail: 'downstream said no',
  errorType: 'Error',
  errorStack: `Error: downstream said no\n${'    at frame\n'.repeat(200)}`,
  attempts: 4,
  queue: 'default',
  task: 'sync-crm',
  jobId: 'job-1',
  messageId: 'm-1',
  sentTimestamp: 1,
  archivedAt: 2,
  workerId: 'host-1',
};

describe('archive entries', () => {
  it('keep the original body untouched and the record in attributes', () => {
    const entry = archiveEntry('0', '{"task":"sync-crm"}', record);
    expect(entry.body).toBe('{"task":"sync-crm"}');
    expect(entry.attributes?.[ARCHIVE_REASON_ATTRIBUTE]).toBe('exhausted');
    expect(readArchiveRecord(entry.attributes ?? {})).toEqual(record);
  });

  it('drop the stack, then shorten the detail, to fit SQS beside a near-limit body', () => {
    const body = 'x'.repeat(SQS_MESSAGE_LIMIT_BYTES - 1000);
    const entry = archiveEntry('0', body, { ...record, detail: 'd'.repeat(5000) });
    const size = bodyBytes(entry.body) + Object.entries(entry.attributes ?? {}).reduce((n, [k, v]) => n + bodyBytes(k) + bodyBytes(v), 0);
    expect(size).toBeLessThanOrEqual(SQS_MESSAGE_LIMIT_BYTES);
    const kept = readArchiveRecord(entry.attributes ?? {});
    expect(kept?.errorStack).toBeUndefined();
    expect(kept?.reason).toBe('exhausted');
  });

  it('cut the end of a body too close to 1 MiB for any record, never inside a character, and say so', () => {
    // 4-byte characters: a cut at an arbitrary byte would split one.
    const body = '\u{1F600}'.repeat(SQS_MESSAGE_LIMIT_BYTES / 4);
    const entry = archiveEntry('0', body, record);
    expect(messageBytes(entry.body, entry.attributes)).toBeLessThanOrEqual(SQS_MESSAGE_LIMIT_BYTES);
    expect(messageBytes(entry.body, entry.attributes)).toBeGreaterThan(SQS_MESSAGE_LIMIT_BYTES - 4);
    expect(body.startsWith(entry.body)).toBe(true);
    expect(entry.body).not.toContain('\uFFFD');
    const kept = readArchiveRecord(entry.attributes ?? {});
    expect(kept).toMatchObject({ reason: 'exhausted', jobId: 'job-1', bodyTruncatedFrom: SQS_MESSAGE_LIMIT_BYTES });
    expect(entry.attributes?.[ARCHIVE_REASON_ATTRIBUTE]).toBe('exhausted');
  });

  it('keep a body whole when the record fits beside it without its stack', () => {
    const body = 'x'.repeat(SQS_MESSAGE_LIMIT_BYTES - 1024);
    const entry = archiveEntry('0', body, record);
    expect(entry.body).toBe(body);
    expect(readArchiveRecord(entry.attributes ?? {})?.bodyTruncatedFrom).toBeUndefined();
  });

  it('reads nothing from messages that are not archive records', () => {
    expect(readArchiveRecord({})).toBeUndefined();
    expect(readArchiveRecord({ 'taskworker-archive': 'not json' })).toBeUndefined();
  });
});

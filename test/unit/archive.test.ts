import { ARCHIVE_REASON_ATTRIBUTE, type ArchiveRecord, archiveEntry, readArchiveRecord } from '../../lib/archive';
import { bodyBytes, SQS_MESSAGE_LIMIT_BYTES } from '../../lib/envelope';

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

  it('reads nothing from messages that are not archive records', () => {
    expect(readArchiveRecord({})).toBeUndefined();
    expect(readArchiveRecord({ 'taskworker-archive': 'not json' })).toBeUndefined();
  });
});

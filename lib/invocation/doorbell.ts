/**
 * The doorbell: how an idle version wakes within a second without keeping a dispatcher listening.
 * An SQS trigger (Lambda's event-source mapping) on each `wakeUp: 'doorbell'` queue invokes the
 * doorbell function — the dispatcher's own code with a timeout that fits the queue's visibility —
 * with a batch. The invocation runs that batch under the dispatcher's rules (claim, time limits,
 * settle) and ends: it does not go on selecting. The trigger's `MaximumConcurrency` (2) bounds what
 * it takes out of priority order; a backlog is the scheduled dispatcher's, which scales out and
 * selects by priority (`npm run bench:selectors` measured a doorbell that went on selecting: it
 * became six more dispatchers under load, doubling Lambda time and SQS requests per task).
 *
 * The dispatcher settles every message itself; what it did not delete (retried, released,
 * deferred, left to a newer attempt, a settle call that failed) is reported back as a batch item
 * failure, so the trigger never deletes a message the dispatcher meant to keep.
 */
import type { QueueConfig, TaskworkerConfig } from '../config/app-config';
import type { QueueUrls, ReceivedMessage } from '../ports';
import type { BatchReport, JobOutcome } from '../settle/report';

/** One record of Lambda's SQS event, the fields the doorbell reads. */
export interface SqsEventRecord {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  readonly attributes: { readonly ApproximateReceiveCount?: string; readonly SentTimestamp?: string; readonly AWSTraceHeader?: string };
  readonly messageAttributes?: Readonly<Record<string, { readonly stringValue?: string; readonly dataType?: string }>>;
  readonly eventSource: 'aws:sqs';
  readonly eventSourceARN: string;
}

/** The records of an SQS trigger's event, or undefined for any other event. */
export function sqsRecordsOf(event: unknown): readonly SqsEventRecord[] | undefined {
  if (typeof event !== 'object' || event === null) return undefined;
  const records = (event as { Records?: unknown }).Records;
  if (!Array.isArray(records) || records.length === 0) return undefined;
  return records.every((r) => typeof r === 'object' && r !== null && (r as { eventSource?: unknown }).eventSource === 'aws:sqs')
    ? (records as SqsEventRecord[])
    : undefined;
}

/** A record as the dispatcher's own receive would have returned it. */
export function receivedFromRecord(record: SqsEventRecord): ReceivedMessage {
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries(record.messageAttributes ?? {})) {
    if (typeof value?.stringValue === 'string') attributes[name] = value.stringValue;
  }
  return {
    messageId: record.messageId,
    receiptHandle: record.receiptHandle,
    body: record.body,
    receiveCount: Number(record.attributes?.ApproximateReceiveCount ?? 1),
    sentTimestamp: Number(record.attributes?.SentTimestamp ?? Date.now()),
    attributes,
    ...(typeof record.attributes?.AWSTraceHeader === 'string' ? { awsTraceHeader: record.attributes.AWSTraceHeader } : {}),
  };
}

/** A doorbell batch: the records of one queue of this version, as received messages. */
export interface DoorbellBatch {
  readonly queue: QueueConfig;
  readonly messages: readonly ReceivedMessage[];
}

/**
 * Groups an event's records by the configured queue they came from (an ARN's last part is the
 * queue's name, the URL's last path segment). Records of a queue this version does not have are
 * returned apart: they are not this dispatcher's to touch.
 */
export function doorbellBatches(
  records: readonly SqsEventRecord[],
  config: TaskworkerConfig,
  urls: QueueUrls,
): { readonly batches: readonly DoorbellBatch[]; readonly foreign: readonly SqsEventRecord[] } {
  const byName = new Map<string, QueueConfig>();
  for (const q of config.queues) {
    const url = urls.queues[q.name];
    if (url) byName.set(url.slice(url.lastIndexOf('/') + 1), q);
  }
  const grouped = new Map<QueueConfig, ReceivedMessage[]>();
  const foreign: SqsEventRecord[] = [];
  for (const record of records) {
    const queue = byName.get(String(record.eventSourceARN).split(':').at(-1) ?? '');
    if (!queue) {
      foreign.push(record);
      continue;
    }
    const list = grouped.get(queue) ?? [];
    list.push(receivedFromRecord(record));
    grouped.set(queue, list);
  }
  return { batches: [...grouped].map(([queue, messages]) => ({ queue, messages })), foreign };
}

/** Outcomes after which the message is done with (archived ones only once the archive holds them). */
const DELETED: ReadonlySet<JobOutcome> = new Set(['succeeded', 'archived', 'duplicate', 'scheduled', 'cancelled', 'split']);

/**
 * What to tell the trigger: every message the dispatcher means to keep. The rest the trigger
 * deletes — after the invocation, so after the job records and archive sends it made (the order
 * the settle keeps). A message replaced by a fresh copy near its redrive limit is deleted too. A
 * settle call that failed (`unsettled`) counts as kept, whatever was meant: the message comes back
 * and the job record decides again, where a delete could lose an archive that never landed.
 */
export function batchItemFailures(reports: readonly BatchReport[], messageIds: readonly string[]): Array<{ itemIdentifier: string }> {
  const settled = new Set<string>();
  for (const report of reports) {
    for (const job of report.jobs)
      if ((DELETED.has(job.outcome) || (job.requeued && job.outcome !== 'stale')) && !job.unsettled) settled.add(job.messageId);
  }
  return messageIds.filter((id) => !settled.has(id)).map((id) => ({ itemIdentifier: id }));
}

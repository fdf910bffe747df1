/** SQS's own limits on a message, as the service counts them. */

/** SQS's own limit for a message (body plus attributes). */
export const SQS_MESSAGE_LIMIT_BYTES = 1_048_576;
/** SQS visibility timeouts stop at 12 hours. */
export const MAX_VISIBILITY_SECONDS = 43_200;
/** SQS's longest `DelaySeconds`: nearer than this a job waits in its queue, farther it is parked. */
export const MAX_QUEUE_DELAY_SECONDS = 900;
/** SQS's batch calls (SendMessageBatch, DeleteMessageBatch, ChangeMessageVisibilityBatch) and a receive take at most 10 entries. */
export const MAX_BATCH_ENTRIES = 10;
/** SQS's longest retention; the DLQ and archive use it. */
export const MAX_RETENTION_SECONDS = 1_209_600;
/** SQS allows at most 80 characters in a queue name. */
export const MAX_QUEUE_NAME_CHARS = 80;

/** Bytes SQS counts for a body. */
export function bodyBytes(body: string): number {
  return Buffer.byteLength(body, 'utf8');
}

const STRING_TYPE_BYTES = 'String'.length;

/**
 * Bytes SQS counts for a message against its 1 MiB limit (and a batch's, summed): the body, and
 * each string attribute's name, data type (`String`) and value.
 */
export function messageBytes(body: string, attributes: Readonly<Record<string, string>> = {}): number {
  let bytes = bodyBytes(body);
  for (const [name, value] of Object.entries(attributes)) bytes += bodyBytes(name) + STRING_TYPE_BYTES + bodyBytes(value);
  return bytes;
}

import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  GetQueueUrlCommand,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
// SQS's longest DelaySeconds (a message due later is held in flight instead) and visibility (how
// long a message being put back is held while others are).
import {
  MAX_QUEUE_DELAY_SECONDS as MAX_DELAY_SECONDS,
  MAX_VISIBILITY_SECONDS,
  messageBytes,
  SQS_MESSAGE_LIMIT_BYTES,
} from '../layout/sqs-limits';
import { ARCHIVE_RECORD_ATTRIBUTE } from '../wire/archive-record';
import { pinnedCopy } from '../wire/event';

/**
 * What fauxqs keeps only in memory, written to disk at a clean stop of `taskworker dev` and put back
 * at its next start: every queue's messages and every bucket's objects. (DynamoDB keeps its own
 * tables on disk; SNS topics and subscriptions are made again by provisioning.)
 *
 * fauxqs 1.9 has no persistence, and its store is not exported, so the messages are read from its
 * inspection route (`/_fauxqs/queues/<name>`: ready, delayed and in-flight messages with their
 * bodies, attributes, receive counts and deadlines) and put back through the SQS API. A message put
 * back is a new message (new MessageId and SentTimestamp), so a body that left its job id (or event
 * id) and publish time to SQS's defaults has them pinned in, as a dispatcher's own copies do; an
 * archived message keeps its body and record untouched. Its receive count is kept (received that
 * many times as it is put back: a job on an untracked queue counts its attempts by it, and the
 * redrive to the DLQ does), and so is the time it becomes visible: deadlines are kept as times, not
 * as time left, because the jobs table's times (a scheduled job's due time, an expiry) go on while
 * dev is stopped, and a message due meanwhile is visible at the start, as in AWS with no consumer.
 */
export interface Snapshot {
  readonly v: 1;
  readonly takenAt: number;
  readonly queues: readonly KeptQueue[];
  readonly buckets: readonly KeptBucket[];
}

export interface KeptQueue {
  readonly name: string;
  /** The queue's settable attributes, to create it again when no provisioning does. */
  readonly attributes: Readonly<Record<string, string>>;
  readonly messages: readonly KeptMessage[];
}

export interface KeptMessage {
  /** The body as it is sent back: job or event id and publish time pinned where they were defaults. */
  readonly body: string;
  readonly attributes: Readonly<Record<string, KeptAttribute>>;
  readonly receiveCount: number;
  /** When it is (or was) visible again, epoch ms: its delay's or its visibility's end; 0 when it was visible. */
  readonly visibleAt: number;
}

/** A message attribute as fauxqs keeps it (a binary value as base64). */
interface KeptAttribute {
  readonly DataType: string;
  readonly StringValue?: string;
  readonly BinaryValue?: string;
}

export interface KeptBucket {
  readonly name: string;
  readonly objects: ReadonlyArray<{
    readonly key: string;
    /** The object's bytes, in a file of their own in the snapshot's `objects/`. */
    readonly file: string;
    readonly contentType?: string;
    readonly metadata?: Readonly<Record<string, string>>;
  }>;
}

/** What a restore put back. */
export interface Restored {
  readonly queues: number;
  readonly messages: number;
  readonly objects: number;
}

/** fauxqs's message, as its inspection route lists it. */
interface FauxqsMessage {
  readonly messageId: string;
  readonly body: string;
  readonly messageAttributes?: Readonly<Record<string, KeptAttribute>>;
  readonly sentTimestamp: number;
  readonly approximateReceiveCount: number;
  readonly delayUntil?: number;
}

interface FauxqsQueue {
  readonly attributes: Readonly<Record<string, string>>;
  readonly messages: {
    readonly ready: readonly FauxqsMessage[];
    readonly delayed: readonly FauxqsMessage[];
    readonly inflight: ReadonlyArray<{ readonly message: FauxqsMessage; readonly visibilityDeadline: number }>;
  };
}

/** The attributes CreateQueue takes back; the rest are counts and times fauxqs computes. */
const SETTABLE_ATTRIBUTES = [
  'VisibilityTimeout',
  'MessageRetentionPeriod',
  'DelaySeconds',
  'MaximumMessageSize',
  'ReceiveMessageWaitTimeSeconds',
  'RedrivePolicy',
  'Policy',
];

const QUEUES_FILE = 'queues.json';
const OBJECTS_DIR = 'objects';

/** Reads every queue's messages and every bucket's objects from fauxqs at `endpoint`. */
export async function takeSnapshot(endpoint: string, s3: S3Client, objectsDir: string): Promise<Snapshot> {
  const listed = (await inspect(`${endpoint}/_fauxqs/queues`)) as ReadonlyArray<{ readonly name: string }>;
  const queues: KeptQueue[] = [];
  for (const { name } of listed) {
    // A FIFO queue is nothing taskworker makes, and its order could not be put back through this route.
    if (name.endsWith('.fifo')) continue;
    const queue = (await inspect(`${endpoint}/_fauxqs/queues/${encodeURIComponent(name)}`)) as FauxqsQueue;
    const kept = (message: FauxqsMessage, visibleAt: number): KeptMessage => {
      const attributes = message.messageAttributes ?? {};
      const archived = Object.hasOwn(attributes, ARCHIVE_RECORD_ATTRIBUTE);
      const pinned = archived ? message.body : pinnedCopy(message.body, message);
      const fits = messageBytes(pinned, stringValues(attributes)) <= SQS_MESSAGE_LIMIT_BYTES;
      return { body: fits ? pinned : message.body, attributes, receiveCount: message.approximateReceiveCount, visibleAt };
    };
    queues.push({
      name,
      attributes: Object.fromEntries(
        SETTABLE_ATTRIBUTES.flatMap((a) => (queue.attributes[a] !== undefined ? [[a, queue.attributes[a]]] : [])),
      ),
      messages: [
        ...queue.messages.ready.map((m) => kept(m, 0)),
        ...queue.messages.inflight.map((e) => kept(e.message, e.visibilityDeadline)),
        ...queue.messages.delayed.map((m) => kept(m, m.delayUntil ?? 0)),
      ],
    });
  }
  const buckets: KeptBucket[] = [];
  let files = 0;
  await mkdir(objectsDir, { recursive: true });
  for (const bucket of (await s3.send(new ListBucketsCommand({}))).Buckets ?? []) {
    const name = bucket.Name as string;
    const objects: Array<KeptBucket['objects'][number]> = [];
    let ContinuationToken: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: name, ...(ContinuationToken ? { ContinuationToken } : {}) }));
      for (const { Key } of page.Contents ?? []) {
        const object = await s3.send(new GetObjectCommand({ Bucket: name, Key }));
        files += 1;
        const file = String(files);
        await writeFile(join(objectsDir, file), (await object.Body?.transformToByteArray()) ?? new Uint8Array());
        objects.push({
          key: Key as string,
          file,
          ...(object.ContentType ? { contentType: object.ContentType } : {}),
          ...(object.Metadata && Object.keys(object.Metadata).length > 0 ? { metadata: object.Metadata } : {}),
        });
      }
      ContinuationToken = page.NextContinuationToken;
    } while (ContinuationToken);
    buckets.push({ name, objects });
  }
  return { v: 1, takenAt: Date.now(), queues, buckets };
}

/**
 * Writes a snapshot of fauxqs into `dir`, whole or not at all: it is taken into a directory beside
 * it, which then replaces `dir`.
 */
export async function saveSnapshot(dir: string, endpoint: string, s3: S3Client): Promise<Snapshot> {
  const partial = `${dir}.partial`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  const snapshot = await takeSnapshot(endpoint, s3, join(partial, OBJECTS_DIR));
  await writeFile(join(partial, QUEUES_FILE), JSON.stringify(snapshot));
  await rm(dir, { recursive: true, force: true });
  await rename(partial, dir);
  return snapshot;
}

/** The snapshot kept in `dir`, or undefined when there is none. */
export async function readSnapshot(dir: string): Promise<Snapshot | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, QUEUES_FILE), 'utf8')) as Snapshot;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Puts a snapshot back into a fresh fauxqs, after the stack's provisioning (its queues exist with
 * the config's settings now; a queue of the snapshot that provisioning did not make, another
 * version's or app's, is created with the settings it had). Nothing may consume from the queues
 * meanwhile: a message is put back with its receive count by receiving it, alone, that many times.
 */
export async function restoreSnapshot(dir: string, snapshot: Snapshot, sqs: SQSClient, s3: S3Client): Promise<Restored> {
  let messages = 0;
  let objects = 0;
  // Dead-letter queues before the queues that redrive to them.
  const ordered = [...snapshot.queues].sort((a, b) => Number('RedrivePolicy' in a.attributes) - Number('RedrivePolicy' in b.attributes));
  for (const queue of ordered) {
    const url = await queueUrl(sqs, queue);
    await restoreMessages(sqs, url, queue.messages);
    messages += queue.messages.length;
  }
  for (const bucket of snapshot.buckets) {
    try {
      await s3.send(new CreateBucketCommand({ Bucket: bucket.name }));
    } catch (error) {
      const name = (error as { name?: unknown }).name;
      if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
    }
    for (const object of bucket.objects) {
      await s3.send(
        new PutObjectCommand({
          Bucket: bucket.name,
          Key: object.key,
          Body: await readFile(join(dir, OBJECTS_DIR, object.file)),
          ...(object.contentType ? { ContentType: object.contentType } : {}),
          ...(object.metadata ? { Metadata: object.metadata } : {}),
        }),
      );
      objects += 1;
    }
  }
  return { queues: snapshot.queues.filter((q) => q.messages.length > 0).length, messages, objects };
}

/** Puts back the snapshot kept in `dir`, if one is there, and removes it: from now on the queues hold it, and the next clean stop writes it again. */
export async function restoreAndRemove(dir: string, sqs: SQSClient, s3: S3Client): Promise<Restored | undefined> {
  const snapshot = await readSnapshot(dir);
  if (!snapshot) return undefined;
  const restored = await restoreSnapshot(dir, snapshot, sqs, s3);
  await rm(dir, { recursive: true, force: true });
  return restored;
}

async function queueUrl(sqs: SQSClient, queue: KeptQueue): Promise<string> {
  try {
    return (await sqs.send(new GetQueueUrlCommand({ QueueName: queue.name }))).QueueUrl as string;
  } catch {
    return (await sqs.send(new CreateQueueCommand({ QueueName: queue.name, Attributes: { ...queue.attributes } }))).QueueUrl as string;
  }
}

/**
 * Sends a queue's messages back. One that had been received is sent alone (the others it held are
 * in flight meanwhile) and received as many times as it had been, the last time held; one due more
 * than SQS's longest delay ahead is held the same way. Then the rest are sent, delayed by what is
 * left of their delay, and each held one is given what is left of its time (0: visible now).
 */
async function restoreMessages(sqs: SQSClient, url: string, messages: readonly KeptMessage[]): Promise<void> {
  const now = Date.now();
  const secondsLeft = (m: KeptMessage) => Math.max(0, Math.ceil((m.visibleAt - now) / 1000));
  const heldFirst = (m: KeptMessage) => m.receiveCount > 0 || secondsLeft(m) > MAX_DELAY_SECONDS;
  const held: Array<{ receiptHandle: string; seconds: number }> = [];
  for (const message of messages.filter(heldFirst)) {
    await send(sqs, url, message, 0);
    let receiptHandle: string | undefined;
    for (let receive = 0; receive < Math.max(1, message.receiveCount); receive++) {
      if (receiptHandle)
        await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: receiptHandle, VisibilityTimeout: 0 }));
      const got = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 1, WaitTimeSeconds: 0, VisibilityTimeout: MAX_VISIBILITY_SECONDS }),
      );
      // None: its queue's maxReceiveCount is lower now, and SQS moved it to the DLQ, as the next receive would have.
      receiptHandle = got.Messages?.[0]?.ReceiptHandle;
      if (!receiptHandle) break;
    }
    if (receiptHandle) held.push({ receiptHandle, seconds: Math.min(MAX_VISIBILITY_SECONDS, secondsLeft(message)) });
  }
  for (const message of messages.filter((m) => !heldFirst(m))) await send(sqs, url, message, secondsLeft(message));
  for (const { receiptHandle, seconds } of held) {
    await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: receiptHandle, VisibilityTimeout: seconds }));
  }
}

async function send(sqs: SQSClient, url: string, message: KeptMessage, delaySeconds: number): Promise<void> {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(message.attributes)) {
    attributes[name] = {
      DataType: value.DataType,
      ...(value.StringValue !== undefined ? { StringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { BinaryValue: Buffer.from(value.BinaryValue, 'base64') } : {}),
    };
  }
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: url,
      MessageBody: message.body,
      ...(delaySeconds > 0 ? { DelaySeconds: delaySeconds } : {}),
      ...(Object.keys(attributes).length > 0 ? { MessageAttributes: attributes } : {}),
    }),
  );
}

function stringValues(attributes: Readonly<Record<string, KeptAttribute>>): Record<string, string> {
  return Object.fromEntries(Object.entries(attributes).map(([name, value]) => [name, value.StringValue ?? value.BinaryValue ?? '']));
}

async function inspect(url: string): Promise<unknown> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`fauxqs's inspection ${url} answered ${response.status}`);
  return response.json();
}

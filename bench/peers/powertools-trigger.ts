/**
 * The peer that pays the same price as taskworker's `full` tracking: Lambda's SQS trigger with
 * Powertools idempotency (`@aws-lambda-powertools/idempotency`, the real package, DynamoDB
 * persistence), emulated as closely as a process can:
 *
 * - the event-source mapping's pollers as AWS documents them for a standard queue
 *   (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html): once messages are
 *   available it processes five batches at a time in five concurrent invocations, and while messages
 *   are still available it adds up to 300 more a minute (one every 200 ms here), up to its ceiling
 *   ({@link TRIGGER_SCALING}); each poller long-polls the queue for batches of 10 and hands each
 *   batch to one "invocation" of the handler, one batch at a time (one poller = one concurrent
 *   invocation = up to 10 records in flight);
 * - the handler: every record of the batch at once (Promise.all), each wrapped in `makeIdempotent`
 *   with a `DynamoDBPersistenceLayer` (the documented SQS pattern), keyed on the job id in the
 *   envelope (`eventKeyJmesPath: 'id'`); a record that throws is reported in `batchItemFailures`
 *   (partial batch response);
 * - after the invocation, the mapping deletes the records not reported as failed in one
 *   DeleteMessageBatch.
 *
 * Not emulated: the Lambda Invoke between poller and function (no request the user is billed for,
 * but real latency on AWS), cold starts, and that every invocation has a CPU of its own on AWS (here
 * all of them share this process's event loop, as taskworker's slots share its dispatcher's).
 */

import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { type DecodedJob, decodeEnvelope } from '../../lib/wire/envelope';

/** The batch size of the trigger, as taskworker's queues are configured in the benchmark. */
export const TRIGGER_BATCH_SIZE = 10;

/** How the mapping's concurrent invocations grow while messages are available (AWS's documented rules). */
export interface TriggerScaling {
  /** Concurrent batches (invocations) once messages are available. */
  readonly initial: number;
  /** Invocations added a minute while messages are still available; 0 keeps `initial`. */
  readonly addedPerMinute: number;
  /** The mapping's ceiling (its MaximumConcurrency, when one is set). */
  readonly maximum: number;
}

/** AWS's documented rules for a standard queue: five, then up to 300 more a minute, to 1,250 (design.md, "Facts"). */
export const TRIGGER_SCALING: TriggerScaling = { initial: 5, addedPerMinute: 300, maximum: 1250 };

/** The idempotency table as Powertools documents it: partition key `id` (string), on-demand. */
export async function createIdempotencyTable(admin: DynamoDBClient, tableName: string): Promise<void> {
  await admin.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  for (;;) {
    const out = await admin.send(new DescribeTableCommand({ TableName: tableName }));
    if (out.Table?.TableStatus === 'ACTIVE') return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export interface TriggerRun {
  readonly seconds: number;
  readonly batches: number;
  /** Concurrent invocations at the start and the most the mapping reached. */
  readonly pollers: { readonly initial: number; readonly peak: number };
  /** Records whose idempotent call threw (reported as batch item failures, left on the queue). */
  readonly failures: number;
}

/** Consumes `count` messages of `queueUrl` as the trigger would, until all have been deleted. */
export async function runPowertoolsTrigger(options: {
  /** Poller `i`'s SQS client (one each, or the same for all). */
  readonly sqs: (poller: number) => SQSClient;
  readonly dynamo: DynamoDBClient;
  readonly queueUrl: string;
  readonly tableName: string;
  readonly count: number;
  readonly scaling: TriggerScaling;
  /** Powertools' `keyPrefix`: the idempotency key is `<keyPrefix>#<MD5 of the JSON of the job id>`. */
  readonly keyPrefix: string;
  readonly run: (job: DecodedJob) => Promise<void> | void;
}): Promise<TriggerRun> {
  const { queueUrl, count } = options;
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName: options.tableName, awsSdkV3Client: options.dynamo });
  const config = new IdempotencyConfig({ eventKeyJmesPath: 'id' });
  // What the handler does first: the in-progress record expires with the invocation.
  const invocationEnds = Date.now() + 900_000;
  config.registerLambdaContext({ getRemainingTimeInMillis: () => invocationEnds - Date.now() } as unknown as Context);
  const processRecord = makeIdempotent(
    async (job: DecodedJob) => {
      await options.run(job);
    },
    { persistenceStore, config, keyPrefix: options.keyPrefix },
  );
  /** The function: every record at once; the failed ones reported (partial batch response). */
  const handler = async (records: ReadonlyArray<{ MessageId?: string | undefined; Body?: string | undefined }>) => {
    const batchItemFailures: Array<{ itemIdentifier: string }> = [];
    await Promise.all(
      records.map(async (record) => {
        try {
          const job = decodeEnvelope(record.Body ?? '', { messageId: record.MessageId ?? '', sentTimestamp: Date.now() });
          await processRecord(job);
        } catch {
          batchItemFailures.push({ itemIdentifier: record.MessageId ?? '' });
        }
      }),
    );
    return { batchItemFailures };
  };

  let deleted = 0;
  let batches = 0;
  let failures = 0;
  const started = performance.now();
  let finished = 0;
  /** Whether the last receive found messages: the mapping grows only while they are still available. */
  let available = false;
  const poller = async (index: number) => {
    const sqs = options.sqs(index);
    while (deleted < count) {
      const out = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: TRIGGER_BATCH_SIZE, WaitTimeSeconds: 1 }),
      );
      const messages = out.Messages ?? [];
      available = messages.length > 0;
      if (messages.length === 0) continue;
      const result = await handler(messages);
      const failed = new Set(result.batchItemFailures.map((f) => f.itemIdentifier));
      const done = messages.filter((m) => !failed.has(m.MessageId ?? ''));
      failures += failed.size;
      if (done.length > 0) {
        await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
          }),
        );
      }
      batches += 1;
      deleted += done.length;
      if (deleted >= count && finished === 0) finished = performance.now();
    }
  };
  const { scaling } = options;
  const running = Array.from({ length: Math.min(scaling.initial, scaling.maximum) }, (_, i) => poller(i));
  // One more poller every 60 s / addedPerMinute while messages are still available, up to the ceiling.
  const scaler =
    scaling.addedPerMinute > 0
      ? setInterval(() => {
          if (available && deleted < count && running.length < scaling.maximum) running.push(poller(running.length));
        }, 60_000 / scaling.addedPerMinute)
      : undefined;
  try {
    // Pollers added while these ran are awaited too.
    for (let awaited = 0; awaited < running.length; awaited++) await running[awaited];
  } finally {
    clearInterval(scaler);
  }
  return {
    seconds: ((finished || performance.now()) - started) / 1000,
    batches,
    pollers: { initial: Math.min(scaling.initial, scaling.maximum), peak: running.length },
    failures,
  };
}

import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { fromItem } from '../../../lib/adapters/dynamo-values';
import type { LocalStack } from '../../../lib/local/dev';
import type { Logger, QueueUrls } from '../../../lib/ports';
import type { JobRecord } from '../../../lib/track/job-record';
import type { QueueDayStats, StatsStore } from '../../../lib/track/stats-store';
import { type ArchiveRecord, readArchiveRecord } from '../../../lib/wire/archive-record';

export const CHAOS_CONFIG = join(__dirname, '..', 'fixtures', 'taskworker.config.ts');
export const MEMORY_CONFIG = join(__dirname, '..', 'fixtures', 'memory.config.ts');
export const SIGTERM_CONFIG = join(__dirname, '..', 'fixtures', 'sigterm.config.ts');
export const ONE_SLOT_CONFIG = join(__dirname, '..', 'fixtures', 'one-slot.config.ts');
export const JOURNAL_CONFIG = join(__dirname, '..', 'fixtures', 'journal.config.ts');
export const BATCHES_CONFIG = join(__dirname, '..', 'fixtures', 'batches.config.ts');
export const STARVED_CONFIG = join(__dirname, '..', 'fixtures', 'starved.config.ts');

const CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

/** Clients the test itself uses on the emulators: never faulted, never proxied. */
export function cleanClients(endpoints: { sqs: string; dynamodb: string }) {
  return {
    sqs: new SQSClient({ region: 'us-east-1', endpoint: endpoints.sqs, credentials: CREDENTIALS }),
    dynamo: new DynamoDBClient({ region: 'us-east-1', endpoint: endpoints.dynamodb, credentials: CREDENTIALS }),
  };
}

/** The table the `effect` task writes its fenced side effect to (key `pk`: the job id). */
export async function createEffectsTable(dynamo: DynamoDBClient, name: string): Promise<string> {
  await dynamo.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    }),
  );
  return name;
}

/** Every item of a table (consistent reads). */
export async function scanAll(dynamo: DynamoDBClient, table: string): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  let start: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined;
  do {
    const out = await dynamo.send(
      new ScanCommand({ TableName: table, ConsistentRead: true, ...(start ? { ExclusiveStartKey: start } : {}) }),
    );
    for (const item of out.Items ?? []) items.push(fromItem(item));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

export interface ArchivedMessage {
  readonly messageId: string;
  readonly body: string;
  readonly record: ArchiveRecord | undefined;
  readonly reasonAttribute: string | undefined;
}

/** Takes every message out of the archive queue (receive, then delete). */
export async function drainArchive(sqs: SQSClient, archiveUrl: string): Promise<ArchivedMessage[]> {
  const out: ArchivedMessage[] = [];
  for (;;) {
    const got = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: archiveUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 600, MessageAttributeNames: ['All'] }),
    );
    const messages = got.Messages ?? [];
    if (messages.length === 0) return out;
    for (const m of messages) {
      const attributes = Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue ?? '']));
      out.push({
        messageId: m.MessageId ?? '',
        body: m.Body ?? '',
        record: readArchiveRecord(attributes),
        reasonAttribute: attributes['taskworker-reason'],
      });
    }
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: archiveUrl,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
      }),
    );
  }
}

/** A job as published: what the audit expects to find. */
export interface Published {
  readonly jobId: string;
  readonly task: string;
}

/** The tasks whose fenced effect (test/chaos/fixtures/tasks/_fenced.ts) the audit counts. */
const EFFECT_TASKS = new Set(['effect', 'effect-batch']);

/** Everything the suites assert about a drained system, counted from the tables and queues themselves. */
export interface Audit {
  readonly published: number;
  readonly succeeded: number;
  readonly archived: number;
  /** Published jobs that are neither succeeded nor archived (with their state, or `missing`). */
  readonly lost: ReadonlyArray<{ jobId: string; state: string }>;
  /** Jobs whose history holds more than one terminal transition (an outcome that stood twice). */
  readonly completedTwice: readonly string[];
  /** Histories at the limit: the audit could not see every transition (raise tracking.historyLimit). */
  readonly truncatedHistories: number;
  readonly archivedByReason: Readonly<Record<string, number>>;
  /** Archived jobs with no archive message carrying a reason. */
  readonly archivedWithoutMessage: readonly string[];
  /** Archive messages without a machine-readable record (reason attribute and record). */
  readonly archiveMessagesWithoutReason: number;
  readonly archiveMessages: number;
  /** Deliveries skipped because the job had finished (history `skipped-duplicate`). */
  readonly skippedDuplicates: number;
  /** Jobs started more than once (`started`/`took-over` entries > 1). */
  readonly restartedJobs: number;
  readonly effects?: {
    /** Jobs of the effect tasks whose guarded effect landed exactly once / more than once / never. */
    readonly once: number;
    readonly overApplied: readonly string[];
    readonly missing: readonly string[];
    /** Bodies that ran more than once for the same job (killed or lost runs). */
    readonly rerunBodies: number;
    readonly bodies: number;
  };
  readonly leftInQueues: number;
  readonly leftInDeadLetterQueues: number;
}

export interface AuditInput {
  readonly sqs: SQSClient;
  readonly dynamo: DynamoDBClient;
  readonly urls: QueueUrls & { readonly deadLetter: Readonly<Record<string, string>> };
  readonly jobsTable: string;
  readonly published: readonly Published[];
  readonly effectsTable?: string;
  /** Archive messages already taken out (the corpus drains per case). */
  readonly archived?: readonly ArchivedMessage[];
  readonly depth: (url: string) => Promise<{ visible: number; inFlight: number; delayed: number }>;
  readonly historyLimit: number;
}

/** {@link audit} of a local stack's version: its clients, queues, jobs table and history limit. */
export function auditStack(local: LocalStack, input: Pick<AuditInput, 'published' | 'effectsTable' | 'depth'>): Promise<Audit> {
  return audit({
    sqs: local.sqs,
    dynamo: local.dynamo,
    urls: local.urls,
    jobsTable: local.tables.jobs,
    historyLimit: local.bundle.config.tracking.historyLimit,
    ...input,
  });
}

const TERMINAL = new Set(['succeeded', 'archived']);

export async function audit(input: AuditInput): Promise<Audit> {
  const jobs = new Map((await scanAll(input.dynamo, input.jobsTable)).map((item) => [item.jobId as string, item as unknown as JobRecord]));
  const archive = [...(input.archived ?? []), ...(await drainArchive(input.sqs, input.urls.archive))];
  const archivedIds = new Set(archive.filter((m) => m.record && m.reasonAttribute).map((m) => m.record?.jobId ?? m.record?.messageId));
  const lost: Array<{ jobId: string; state: string }> = [];
  const completedTwice: string[] = [];
  const archivedWithoutMessage: string[] = [];
  const archivedByReason: Record<string, number> = {};
  let succeeded = 0;
  let archived = 0;
  let truncatedHistories = 0;
  let skippedDuplicates = 0;
  let restartedJobs = 0;
  for (const { jobId } of input.published) {
    const job = jobs.get(jobId);
    if (!job || !TERMINAL.has(job.state)) {
      lost.push({ jobId, state: job?.state ?? 'missing' });
      continue;
    }
    if (job.state === 'succeeded') succeeded += 1;
    else {
      archived += 1;
      archivedByReason[job.reason ?? 'none'] = (archivedByReason[job.reason ?? 'none'] ?? 0) + 1;
      if (!archivedIds.has(jobId)) archivedWithoutMessage.push(jobId);
    }
    const history = job.history ?? [];
    if (history.length >= input.historyLimit) truncatedHistories += 1;
    if (history.filter((h) => TERMINAL.has(h.what)).length > 1) completedTwice.push(jobId);
    skippedDuplicates += history.filter((h) => h.what === 'skipped-duplicate').length;
    if (history.filter((h) => h.what === 'started' || h.what === 'took-over').length > 1) restartedJobs += 1;
  }
  let effects: Audit['effects'];
  if (input.effectsTable) {
    const items = new Map((await scanAll(input.dynamo, input.effectsTable)).map((item) => [item.pk as string, item]));
    const overApplied: string[] = [];
    const missing: string[] = [];
    let once = 0;
    let rerunBodies = 0;
    let bodies = 0;
    for (const { jobId, task } of input.published) {
      if (!EFFECT_TASKS.has(task)) continue;
      const item = items.get(jobId);
      const applies = Number(item?.applies ?? 0);
      const runs = Number(item?.runs ?? 0);
      bodies += runs;
      if (runs > 1) rerunBodies += 1;
      if (applies > 1) overApplied.push(jobId);
      else if (applies === 1) once += 1;
      else if (jobs.get(jobId)?.state === 'succeeded') missing.push(jobId);
    }
    effects = { once, overApplied, missing, rerunBodies, bodies };
  }
  const depths = await Promise.all(Object.values(input.urls.queues).map((url) => input.depth(url)));
  const deadDepths = await Promise.all(Object.values(input.urls.deadLetter).map((url) => input.depth(url)));
  const sum = (ds: Array<{ visible: number; inFlight: number; delayed: number }>) =>
    ds.reduce((n, d) => n + d.visible + d.inFlight + d.delayed, 0);
  return {
    published: input.published.length,
    succeeded,
    archived,
    lost,
    completedTwice,
    truncatedHistories,
    archivedByReason,
    archivedWithoutMessage,
    archiveMessagesWithoutReason: archive.filter((m) => !m.record || !m.reasonAttribute).length,
    archiveMessages: archive.length,
    skippedDuplicates,
    restartedJobs,
    ...(effects ? { effects } : {}),
    leftInQueues: sum(depths),
    leftInDeadLetterQueues: sum(deadDepths),
  };
}

/** A queue's stats summed over the days a run spanned. */
export async function statsOver(stats: StatsStore, queue: string, days: readonly string[]) {
  const items = (await Promise.all(days.map((d) => stats.get(queue, d)))).filter((x): x is QueueDayStats => x !== undefined);
  const counter = (name: keyof QueueDayStats['counters']) => items.reduce((n, x) => n + (x.counters[name] ?? 0), 0);
  const archived: Record<string, number> = {};
  for (const x of items) for (const [reason, n] of Object.entries(x.archived)) archived[reason] = (archived[reason] ?? 0) + (n ?? 0);
  return {
    succeeded: counter('succeeded'),
    duplicates: counter('duplicates'),
    released: counter('released'),
    retried: counter('retried'),
    archived,
    archivedTotal: Object.values(archived).reduce((a, b) => a + b, 0),
  };
}

/** Every UTC day from `start` to now (a run may cross midnight). */
export function daysSince(start: number): string[] {
  const days: string[] = [];
  for (let t = start - (start % 86_400_000); t <= Date.now(); t += 86_400_000) days.push(new Date(t).toISOString().slice(0, 10));
  return days;
}

/** A logger that keeps what it is told, to assert that nothing was logged at error level. */
export function recordingLogger(): Logger & { readonly entries: Array<{ level: string; message: string; fields?: unknown }> } {
  const entries: Array<{ level: string; message: string; fields?: unknown }> = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    entries.push({ level, message, ...(fields ? { fields } : {}) });
  };
  return { entries, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Polls `check` every `everyMs` until it holds or `timeoutMs` passes; returns whether it held. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 250): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

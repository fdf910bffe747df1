import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListMessageMoveTasksCommand,
  ListQueuesCommand,
  QueueDoesNotExist,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import type { TaskworkerConfig } from '../config/app-config';
import { describe, MoveTaskUnavailableError } from '../errors';
import { archiveQueueName, queueResourceName } from '../layout/queues';
import { messageBytes, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import type {
  BatchFailure,
  BatchResult,
  DeadLetterMover,
  QueueClient,
  QueueDepth,
  QueueDirectory,
  QueueLister,
  QueueUrls,
  ReceiptEntry,
  ReceivedMessage,
  ReceiveRequest,
  SendBatchResult,
  SendEntry,
  VisibilityEntry,
} from '../ports';

/** {@link QueueClient} on Amazon SQS (or any endpoint that speaks its JSON protocol). */
export class SqsQueueClient implements QueueClient, QueueDirectory, QueueLister, DeadLetterMover {
  constructor(readonly sqs: SQSClient) {}

  async receive(queueUrl: string, request: ReceiveRequest, signal?: AbortSignal): Promise<ReceivedMessage[]> {
    const out = await this.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: request.maxMessages,
        WaitTimeSeconds: request.waitSeconds,
        VisibilityTimeout: request.visibilityTimeoutSeconds,
        MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp', 'AWSTraceHeader'],
        MessageAttributeNames: ['All'],
      }),
      signal ? { abortSignal: signal } : {},
    );
    return (out.Messages ?? []).map((m) => {
      const attributes: Record<string, string> = {};
      for (const [name, value] of Object.entries(m.MessageAttributes ?? {})) {
        if (value.StringValue !== undefined) attributes[name] = value.StringValue;
      }
      return {
        messageId: m.MessageId ?? '',
        receiptHandle: m.ReceiptHandle ?? '',
        body: m.Body ?? '',
        receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? 1),
        sentTimestamp: Number(m.Attributes?.SentTimestamp ?? Date.now()),
        attributes,
        ...(m.Attributes?.AWSTraceHeader ? { awsTraceHeader: m.Attributes.AWSTraceHeader } : {}),
      };
    });
  }

  /**
   * SendMessageBatch, split into as many calls as SQS's 1 MiB limit on a whole request needs
   * (entries near the limit cannot share one). An entry over the limit on its own is reported
   * as a sender fault, as SQS reports a bad entry, and the others are sent.
   */
  async sendBatch(queueUrl: string, entries: readonly SendEntry[]): Promise<SendBatchResult> {
    const failed: BatchFailure[] = [];
    const messageIds: Record<string, string> = {};
    const calls: SendEntry[][] = [];
    let bytes = 0;
    for (const entry of entries) {
      const size = messageBytes(entry.body, entry.attributes);
      if (size > SQS_MESSAGE_LIMIT_BYTES) {
        failed.push({
          id: entry.id,
          code: 'MessageTooLong',
          message: `message is ${size} bytes; SQS takes ${SQS_MESSAGE_LIMIT_BYTES}`,
          senderFault: true,
        });
        continue;
      }
      const current = calls[calls.length - 1];
      if (!current || bytes + size > SQS_MESSAGE_LIMIT_BYTES) {
        calls.push([entry]);
        bytes = size;
      } else {
        current.push(entry);
        bytes += size;
      }
    }
    if (calls.length === 1 && failed.length === 0) return this.sendOneBatch(queueUrl, calls[0] as SendEntry[]);
    for (const call of calls) {
      try {
        const result = await this.sendOneBatch(queueUrl, call);
        failed.push(...result.failed);
        Object.assign(messageIds, result.messageIds);
      } catch (error) {
        // Only this call's entries failed; the calls before it were sent and must not be retried.
        const code = error instanceof Error ? error.name : 'Error';
        const message = error instanceof Error ? error.message : String(error);
        failed.push(...call.map((e) => ({ id: e.id, code, message, senderFault: false })));
      }
    }
    return { failed, messageIds };
  }

  private async sendOneBatch(queueUrl: string, entries: readonly SendEntry[]): Promise<SendBatchResult> {
    const out = await this.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: entries.map((e) => ({
          Id: e.id,
          MessageBody: e.body,
          ...(e.delaySeconds !== undefined ? { DelaySeconds: e.delaySeconds } : {}),
          ...(e.attributes
            ? {
                MessageAttributes: Object.fromEntries(
                  Object.entries(e.attributes).map(([name, value]) => [name, { DataType: 'String', StringValue: value }]),
                ),
              }
            : {}),
        })),
      }),
    );
    const messageIds: Record<string, string> = {};
    for (const s of out.Successful ?? []) if (s.Id && s.MessageId) messageIds[s.Id] = s.MessageId;
    return { failed: failures(out.Failed), messageIds };
  }

  async deleteBatch(queueUrl: string, entries: readonly ReceiptEntry[]): Promise<BatchResult> {
    const out = await this.sqs.send(
      new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries.map((e) => ({ Id: e.id, ReceiptHandle: e.receiptHandle })) }),
    );
    return { failed: failures(out.Failed) };
  }

  async changeVisibilityBatch(queueUrl: string, entries: readonly VisibilityEntry[]): Promise<BatchResult> {
    const out = await this.sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: entries.map((e) => ({ Id: e.id, ReceiptHandle: e.receiptHandle, VisibilityTimeout: e.visibilityTimeoutSeconds })),
      }),
    );
    return { failed: failures(out.Failed) };
  }

  async depth(queueUrl: string): Promise<QueueDepth> {
    const out = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
      }),
    );
    const a = out.Attributes ?? {};
    return {
      visible: Number(a.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
      delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
    };
  }

  async namesWithPrefix(prefix: string): Promise<string[]> {
    const names: string[] = [];
    let NextToken: string | undefined;
    do {
      const out = await this.sqs.send(
        new ListQueuesCommand({ QueueNamePrefix: prefix, MaxResults: 1000, ...(NextToken ? { NextToken } : {}) }),
      );
      names.push(...(out.QueueUrls ?? []).map((url) => url.slice(url.lastIndexOf('/') + 1)));
      NextToken = out.NextToken;
    } while (NextToken);
    return names;
  }

  async urlOf(name: string): Promise<string | undefined> {
    try {
      return await queueUrlOf(this.sqs, name);
    } catch (error) {
      if (error instanceof QueueDoesNotExist || (error instanceof Error && /QueueDoesNotExist|NonExistentQueue/.test(error.name)))
        return undefined;
      throw error;
    }
  }

  async startMove(deadLetterUrl: string): Promise<{ readonly taskHandle?: string }> {
    const SourceArn = await this.arnOf(deadLetterUrl);
    try {
      const out = await this.sqs.send(new StartMessageMoveTaskCommand({ SourceArn }));
      return out.TaskHandle ? { taskHandle: out.TaskHandle } : {};
    } catch (error) {
      // Not where the caller may not: a client-side move would be refused too, and the refusal
      // is the clearer answer.
      if (refusedToCaller(error)) throw error;
      throw new MoveTaskUnavailableError(`the endpoint ran no move task: ${describe(error)}`, { cause: error });
    }
  }

  async moveStatus(deadLetterUrl: string): Promise<string> {
    const SourceArn = await this.arnOf(deadLetterUrl);
    const out = await this.sqs.send(new ListMessageMoveTasksCommand({ SourceArn, MaxResults: 1 }));
    return out.Results?.[0]?.Status ?? 'COMPLETED';
  }

  private async arnOf(queueUrl: string): Promise<string> {
    const out = await this.sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
    const arn = out.Attributes?.QueueArn;
    if (!arn) throw new Error(`GetQueueAttributes returned no QueueArn for ${queueUrl}`);
    return arn;
  }
}

/** An error that says the caller may not do this (credentials, permissions) or the queue is not there. */
function refusedToCaller(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return (
    status === 401 ||
    status === 403 ||
    error instanceof QueueDoesNotExist ||
    /AccessDenied|NotAuthorized|InvalidClientTokenId|UnrecognizedClient|ExpiredToken|CredentialsProviderError/.test(error.name)
  );
}

function failures(
  failed:
    | readonly { Id?: string | undefined; Code?: string | undefined; Message?: string | undefined; SenderFault?: boolean | undefined }[]
    | undefined,
): BatchFailure[] {
  return (failed ?? []).map((f) => ({
    id: f.Id ?? '',
    code: f.Code ?? 'Unknown',
    message: f.Message ?? '',
    senderFault: f.SenderFault === true,
  }));
}

/** One queue's URL by its name (GetQueueUrl). */
export async function queueUrlOf(sqs: SQSClient, name: string): Promise<string> {
  const out = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
  if (!out.QueueUrl) throw new Error(`GetQueueUrl returned no URL for ${name}`);
  return out.QueueUrl;
}

/**
 * Finds a version's queue URLs by the naming convention (`<app>-<version>-<queue>`), one
 * GetQueueUrl per queue. Throws the SDK's QueueDoesNotExist when the version is not deployed.
 */
export async function resolveQueueUrls(sqs: SQSClient, config: TaskworkerConfig, version: string): Promise<QueueUrls> {
  const lookup = (name: string) => queueUrlOf(sqs, name);
  const entries = await Promise.all(
    config.queues.map(async (q) => [q.name, await lookup(queueResourceName(config.app, version, q.name))] as const),
  );
  return { queues: Object.fromEntries(entries), archive: await lookup(archiveQueueName(config.app, version)) };
}

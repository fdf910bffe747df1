/** `dlq redrive`: dead letters moved back to their queues. */

import { MoveTaskUnavailableError } from '../errors';
import { MAX_BATCH_ENTRIES } from '../layout/sqs-limits';
import { callWithEntryRetries } from '../retry-entries';
import type { RedriveResult } from './answers';
import { type OperatorContext, VersionNotFoundError } from './operator-context';

/**
 * Moves each dead-letter queue's messages back to its source queue: with SQS's own move task, or
 * where the service has none (emulators), by receiving, re-sending and then deleting each batch.
 */
export async function redriveDeadLetters(ctx: OperatorContext, queue?: string, wait = true): Promise<RedriveResult[]> {
  const names = queue ? [queue] : ctx.config.queues.map((q) => q.name);
  const results: RedriveResult[] = [];
  for (const name of names) {
    const dlqUrl = ctx.urls.deadLetter[name];
    if (!dlqUrl) throw new VersionNotFoundError(ctx.version, `queue ${name}`);
    const depth = await ctx.queues.depth(dlqUrl);
    const messages = depth.visible + depth.inFlight + depth.delayed;
    if (messages === 0) {
      results.push({ queue: name, messages });
      continue;
    }
    let started: { readonly taskHandle?: string };
    try {
      started = await ctx.queues.startMove(dlqUrl);
    } catch (error) {
      if (!(error instanceof MoveTaskUnavailableError)) throw error;
      const moved = await moveMessages(ctx, dlqUrl, ctx.urls.queues[name] as string);
      results.push({ queue: name, messages: moved, via: 'client', status: 'COMPLETED', moveTaskError: error.message });
      continue;
    }
    let status = 'RUNNING';
    for (let i = 0; wait && status === 'RUNNING' && i < 600; i++) {
      await ctx.clock.sleep(500);
      status = await ctx.queues.moveStatus(dlqUrl);
    }
    results.push({ queue: name, messages, via: 'move-task', ...(started.taskHandle ? { taskHandle: started.taskHandle } : {}), status });
  }
  return results;
}

/** Moves messages between queues, send first and delete after, so an interruption duplicates rather than loses. */
async function moveMessages(ctx: OperatorContext, fromUrl: string, toUrl: string): Promise<number> {
  let moved = 0;
  for (;;) {
    const batch = await ctx.queues.receive(fromUrl, { maxMessages: MAX_BATCH_ENTRIES, waitSeconds: 0, visibilityTimeoutSeconds: 60 });
    if (batch.length === 0) return moved;
    const sent = await callWithEntryRetries(
      batch.map((m) => ({ id: m.messageId, body: m.body, ...(Object.keys(m.attributes).length > 0 ? { attributes: m.attributes } : {}) })),
      (entries) => ctx.queues.sendBatch(toUrl, entries),
      ctx.clock,
    );
    const failed = new Set(sent.failed.map((f) => f.id));
    const done = batch.filter((m) => !failed.has(m.messageId));
    if (done.length > 0) {
      await callWithEntryRetries(
        done.map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle })),
        (entries) => ctx.queues.deleteBatch(fromUrl, entries),
        ctx.clock,
      );
    }
    moved += done.length;
    if (failed.size > 0) throw new Error(`could not move ${failed.size} message(s): ${sent.failed[0]?.code}`);
  }
}

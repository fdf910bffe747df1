import type {
  BatchFailure,
  BatchResult,
  QueueClient,
  QueueDepth,
  ReceiptEntry,
  ReceivedMessage,
  ReceiveRequest,
  SendBatchResult,
  SendEntry,
  VisibilityEntry,
} from '../../lib/ports';

type Operation = 'receive' | 'sendBatch' | 'deleteBatch' | 'changeVisibilityBatch';

interface Fault {
  readonly operation: Operation;
  /** Throw instead of answering (the whole call fails). */
  readonly throws?: string;
  /** Fail the first N entries of the call (batch operations). */
  readonly failEntries?: number;
  readonly code?: string;
  readonly senderFault?: boolean;
  /** How many calls this fault hits. @defaultValue 1 */
  times: number;
}

/**
 * Wraps a real queue client and injects scripted faults: whole-call errors or per-entry failures
 * of batch calls. Failed entries are not passed to the inner client, as with SQS.
 */
export class FaultyQueue implements QueueClient {
  private readonly faults: Fault[] = [];
  readonly injected: Record<Operation, number> = { receive: 0, sendBatch: 0, deleteBatch: 0, changeVisibilityBatch: 0 };

  constructor(private readonly inner: QueueClient) {}

  inject(fault: Omit<Fault, 'times'> & { times?: number }): this {
    this.faults.push({ ...fault, times: fault.times ?? 1 });
    return this;
  }

  private take(operation: Operation): Fault | undefined {
    const fault = this.faults.find((f) => f.operation === operation && f.times > 0);
    if (fault) {
      fault.times -= 1;
      this.injected[operation] += 1;
    }
    return fault;
  }

  async receive(url: string, request: ReceiveRequest, signal?: AbortSignal): Promise<ReceivedMessage[]> {
    const fault = this.take('receive');
    if (fault?.throws) throw Object.assign(new Error(`injected ${fault.throws}`), { name: fault.throws });
    return this.inner.receive(url, request, signal);
  }

  private async batch<E extends { id: string }, R extends BatchResult>(
    operation: Operation,
    entries: readonly E[],
    call: (e: readonly E[]) => Promise<R>,
    empty: R,
  ): Promise<R> {
    const fault = this.take(operation);
    if (fault?.throws) throw Object.assign(new Error(`injected ${fault.throws}`), { name: fault.throws });
    const failing = entries.slice(0, fault?.failEntries ?? 0);
    const passing = entries.slice(failing.length);
    const result = passing.length > 0 ? await call(passing) : empty;
    const injected: BatchFailure[] = failing.map((e) => ({
      id: e.id,
      code: fault?.code ?? 'InternalError',
      message: 'injected',
      senderFault: fault?.senderFault ?? false,
    }));
    return { ...result, failed: [...result.failed, ...injected] };
  }

  sendBatch(url: string, entries: readonly SendEntry[]): Promise<SendBatchResult> {
    return this.batch('sendBatch', entries, (e) => this.inner.sendBatch(url, e), { failed: [], messageIds: {} });
  }

  deleteBatch(url: string, entries: readonly ReceiptEntry[]): Promise<BatchResult> {
    return this.batch('deleteBatch', entries, (e) => this.inner.deleteBatch(url, e), { failed: [] });
  }

  changeVisibilityBatch(url: string, entries: readonly VisibilityEntry[]): Promise<BatchResult> {
    return this.batch('changeVisibilityBatch', entries, (e) => this.inner.changeVisibilityBatch(url, e), { failed: [] });
  }

  depth(url: string): Promise<QueueDepth> {
    return this.inner.depth(url);
  }
}

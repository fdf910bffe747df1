import type { QueueClient, ReceivedMessage } from '../../lib/ports';

export interface QueueFixture {
  readonly client: QueueClient;
  /** Creates a queue (with a DLQ redrive when asked); returns its URL. */
  createQueue(
    name: string,
    options?: { visibilityTimeoutSeconds?: number; deadLetter?: { name: string; maxReceiveCount: number } },
  ): Promise<string>;
  /** Waits `ms` of the fixture's time (real time on an emulator, virtual on the fake). */
  wait(ms: number): Promise<void>;
}

let unique = 0;
const name = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++unique}`;

/**
 * The behaviour taskworker relies on from a queue service. The in-memory fake, the SQS adapter on
 * fauxqs and the simulation's SQS (bench/sim/sqs.ts) all run it, so tests on the fake and figures
 * from the simulation mean something on SQS.
 *
 * A receive that must find messages long-polls: a short poll on SQS samples some of its servers
 * and may miss visible messages (the simulation models that), while a long poll answers at once
 * with what is visible. A receive that must find nothing short-polls: no adapter returns a
 * hidden message.
 */
export function queueClientConformance(label: string, setup: () => Promise<QueueFixture>, teardown: () => Promise<void>): void {
  describe(`QueueClient conformance: ${label}`, () => {
    let f: QueueFixture;
    beforeAll(async () => {
      f = await setup();
    });
    afterAll(teardown);

    /** What is visible, waiting up to a second for it (it answers as soon as something is). */
    const receive = (url: string, visibilityTimeoutSeconds = 30, waitSeconds = 1) =>
      f.client.receive(url, { maxMessages: 10, waitSeconds, visibilityTimeoutSeconds });
    /** A short poll, for checking that nothing is visible. */
    const receiveNow = (url: string) => receive(url, 30, 0);

    it('sends, receives with metadata and attributes, and deletes', async () => {
      const url = await f.createQueue(name('basic'));
      const sent = await f.client.sendBatch(url, [
        { id: 'a', body: 'first', attributes: { kind: 'test' } },
        { id: 'b', body: 'second' },
      ]);
      expect(sent.failed).toEqual([]);
      expect(Object.keys(sent.messageIds).sort()).toEqual(['a', 'b']);
      const messages = await receive(url);
      expect(messages.map((m) => m.body).sort()).toEqual(['first', 'second']);
      const first = messages.find((m) => m.body === 'first');
      expect(first?.attributes).toEqual({ kind: 'test' });
      expect(first?.receiveCount).toBe(1);
      expect(first?.sentTimestamp).toBeGreaterThan(0);
      expect(first?.messageId).toBe(sent.messageIds.a);
      const deleted = await f.client.deleteBatch(
        url,
        messages.map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle })),
      );
      expect(deleted.failed).toEqual([]);
      expect(await f.client.depth(url)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    });

    it('sends a batch whose messages together pass 1 MiB, refusing only a message over the limit on its own', async () => {
      const url = await f.createQueue(name('large'));
      const sent = await f.client.sendBatch(url, [
        { id: 'a', body: 'a'.repeat(600 * 1024), attributes: { kind: 'large' } },
        { id: 'b', body: 'b'.repeat(600 * 1024) },
        { id: 'c', body: 'c'.repeat(1_048_576 - 10), attributes: { kind: 'too large with this' } },
        { id: 'd', body: 'small' },
      ]);
      expect(Object.keys(sent.messageIds).sort()).toEqual(['a', 'b', 'd']);
      expect(sent.failed).toEqual([expect.objectContaining({ id: 'c', senderFault: true })]);
      const messages = await receive(url);
      expect(messages.map((m) => m.body.length).sort((x, y) => x - y)).toEqual([5, 600 * 1024, 600 * 1024]);
    });

    it('hides a received message until its visibility is changed, counting receives', async () => {
      const url = await f.createQueue(name('visibility'));
      await f.client.sendBatch(url, [{ id: 'a', body: 'x' }]);
      const [first] = await receive(url);
      expect(await receiveNow(url)).toEqual([]);
      expect(await f.client.depth(url)).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
      const changed = await f.client.changeVisibilityBatch(url, [
        { id: 'a', receiptHandle: first?.receiptHandle as string, visibilityTimeoutSeconds: 0 },
      ]);
      expect(changed.failed).toEqual([]);
      const [again] = await receive(url);
      expect(again?.messageId).toBe(first?.messageId);
      expect(again?.receiveCount).toBe(2);
    });

    it('brings a message back when its visibility timeout expires', async () => {
      const url = await f.createQueue(name('expiry'));
      await f.client.sendBatch(url, [{ id: 'a', body: 'x' }]);
      await receive(url, 1);
      await f.wait(1500);
      const [again] = await receive(url, 1);
      expect(again?.receiveCount).toBe(2);
    });

    it('reports a bad receipt handle per entry as a sender fault', async () => {
      const url = await f.createQueue(name('receipts'));
      await f.client.sendBatch(url, [{ id: 'a', body: 'x' }]);
      const [message] = await receive(url);
      const result = await f.client.changeVisibilityBatch(url, [
        { id: 'good', receiptHandle: message?.receiptHandle as string, visibilityTimeoutSeconds: 0 },
        { id: 'bad', receiptHandle: 'not-a-receipt-handle', visibilityTimeoutSeconds: 0 },
      ]);
      expect(result.failed.map((r) => [r.id, r.senderFault])).toEqual([['bad', true]]);
    });

    it('delays a message', async () => {
      const url = await f.createQueue(name('delay'));
      await f.client.sendBatch(url, [{ id: 'a', body: 'x', delaySeconds: 1 }]);
      expect(await f.client.depth(url)).toEqual({ visible: 0, inFlight: 0, delayed: 1 });
      expect(await receiveNow(url)).toEqual([]);
      await f.wait(1500);
      expect(await receive(url)).toHaveLength(1);
    });

    it('answers a short poll at once, finding a visible message within a few tries', async () => {
      const url = await f.createQueue(name('shortpoll'));
      await f.client.sendBatch(url, [{ id: 'a', body: 'x' }]);
      let found: ReceivedMessage[] = [];
      for (let tries = 0; tries < 10 && found.length === 0; tries++) found = await receiveNow(url);
      expect(found.map((m) => m.body)).toEqual(['x']);
    });

    it('long-polls until a message arrives or the wait ends', async () => {
      const url = await f.createQueue(name('longpoll'));
      expect(await receive(url, 30, 1)).toEqual([]);
    });

    it('moves a message to the dead-letter queue after maxReceiveCount receives', async () => {
      const dlqName = name('dlq');
      const dlq = await f.createQueue(dlqName);
      const url = await f.createQueue(name('redrive'), { deadLetter: { name: dlqName, maxReceiveCount: 2 } });
      await f.client.sendBatch(url, [{ id: 'a', body: 'poison' }]);
      for (let i = 0; i < 2; i++) {
        const [m] = await receive(url);
        await f.client.changeVisibilityBatch(url, [{ id: 'a', receiptHandle: m?.receiptHandle as string, visibilityTimeoutSeconds: 0 }]);
      }
      // A long poll: the receive that moves the message has to find it.
      expect(await receive(url)).toEqual([]);
      const moved = await receive(dlq);
      expect(moved.map((m) => m.body)).toEqual(['poison']);
    });
  });
}

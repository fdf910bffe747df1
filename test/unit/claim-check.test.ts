import { createHash } from 'node:crypto';
import { ConfigError, MessageTooLargeError } from '../../lib/errors';
import { MemoryPayloadStore } from '../../lib/fakes/memory-payloads';
import type { PayloadStore } from '../../lib/ports';
import { Publisher } from '../../lib/publish/publisher';
import { storedResultReader } from '../../lib/publish/results';
import type { TaskOptions } from '../../lib/tasks/task';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { appConfig } from '../helpers/factories';
import { publisherOf, type World, world } from '../helpers/world';

const BUCKET = 'test-v1-000000000000-us-east-1';
const importer: TaskOptions = {
  name: 'import-rows',
  queue: 'urgent',
  timeLimitSeconds: 5,
  run: (p) => (p as { rows: unknown[] }).rows.length,
};
const failing: TaskOptions = {
  name: 'always-fails',
  queue: 'urgent',
  timeLimitSeconds: 5,
  maxRetries: 0,
  run: () => {
    throw new Error('down');
  },
};
/** A payload of about `kb` kilobytes of JSON. */
const rows = (kb: number) => ({ rows: Array.from({ length: kb }, (_, i) => `${i}:${'x'.repeat(1000)}`) });

function setup(tasks: TaskOptions[] = [importer, failing], store: PayloadStore = new MemoryPayloadStore()) {
  const w = world(tasks, {}, { tracked: true, payloads: { store, bucket: BUCKET } });
  const publisher = new Publisher({
    config: w.config,
    version: 'v1',
    queues: w.queues,
    urls: w.urls,
    jobs: w.jobs,
    payloads: { bucket: BUCKET, store },
  });
  return { w, publisher, store };
}

const bodies = (w: World) => w.sqs.peek(w.urls.queues.urgent as string).map((m) => JSON.parse(m.body) as Record<string, unknown>);
const archived = (w: World) => w.sqs.peek(w.urls.archive).map((m) => ({ body: m.body, record: readArchiveRecord(m.attributes) }));

describe('claim-check payloads: publishing', () => {
  it('puts a payload over the threshold in the version’s bucket and sends a pointer', async () => {
    const { w, publisher, store } = setup();
    const payload = rows(300);

    await publisher.publish('import-rows', payload, { id: 'big-1', queue: 'urgent' });

    const [body] = bodies(w);
    const text = JSON.stringify(payload);
    const sha256 = createHash('sha256').update(text).digest('hex');
    expect(body).not.toHaveProperty('payload');
    expect(body?.payloadRef).toEqual({ bucket: BUCKET, key: `payloads/big-1/${sha256}.json`, bytes: Buffer.byteLength(text), sha256 });
    expect((store as MemoryPayloadStore).objects.get(`${BUCKET}/payloads/big-1/${sha256}.json`)).toBe(text);
  });

  it('keeps a payload under the threshold in the message', async () => {
    const { w, publisher, store } = setup();

    await publisher.publish('import-rows', rows(100), { queue: 'urgent' });

    expect(bodies(w)[0]).toHaveProperty('payload');
    expect((store as MemoryPayloadStore).calls.put).toBe(0);
  });

  it('refuses a payload over 10 MiB, naming its size, and sends and puts nothing', async () => {
    const { w, publisher, store } = setup();

    const publishing = publisher.publish('import-rows', rows(10_500), { queue: 'urgent' });

    await expect(publishing).rejects.toThrow(MessageTooLargeError);
    await expect(publishing).rejects.toThrow(/is 10\d{6} bytes; the limit is 10485760 bytes/);
    expect(bodies(w)).toHaveLength(0);
    expect((store as MemoryPayloadStore).calls.put).toBe(0);
  });

  it('refuses a large payload to run later than its object lives, naming runAt', async () => {
    const { w, publisher } = setup();

    // Objects expire after 14 days; the queue keeps a message 4: it must start within 10.
    const publishing = publisher.publish('import-rows', rows(300), { queue: 'urgent', delaySeconds: 11 * 86_400 });

    await expect(publishing).rejects.toThrow(/runAt.*within 10 days for a payload over payloads.offloadAboveBytes/);
    await publisher.publish('import-rows', rows(300), { queue: 'urgent', delaySeconds: 9 * 86_400 });
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(1);
  });

  it('takes its threshold from the config, and refuses one out of range naming the field', () => {
    expect(appConfig({ payloads: { offloadAboveBytes: 50_000 } }).payloads.offloadAboveBytes).toBe(50_000);
    expect(appConfig().payloads.offloadAboveBytes).toBe(200_000);
    expect(() => appConfig({ payloads: { offloadAboveBytes: 2_000_000 } })).toThrow(ConfigError);
    expect(() => appConfig({ payloads: { offloadAboveBytes: 2_000_000 } })).toThrow(/payloads\.offloadAboveBytes/);
  });
});

describe('claim-check payloads: dispatching', () => {
  it('runs the task with the payload read back, and deletes the object once the job has succeeded', async () => {
    const { w, publisher, store } = setup();
    const payload = rows(300);

    await publisher.publish('import-rows', payload, { id: 'big-2', queue: 'urgent' });
    await w.run();

    expect(w.runs.map((r) => r.payload)).toEqual([payload]);
    expect(await w.jobs.get('big-2')).toMatchObject({ state: 'succeeded' });
    expect((store as MemoryPayloadStore).objects.size).toBe(0);
  });

  it('keeps an archived job’s object, so a replay finds its payload', async () => {
    const { w, publisher, store } = setup();

    await publisher.publish('always-fails', rows(300), { id: 'big-3', queue: 'urgent' });
    await w.run();

    expect(await w.jobs.get('big-3')).toMatchObject({ state: 'archived', reason: 'exhausted' });
    expect(JSON.parse(archived(w)[0]?.body ?? '{}')).toHaveProperty('payloadRef');
    expect((store as MemoryPayloadStore).objects.size).toBe(1);
  });

  it.each([
    ['another bucket', { bucket: 'someone-elses-bucket', key: 'payloads/x.json', bytes: 2 }, /bucket "someone-elses-bucket"/],
    ['a key outside payloads/', { bucket: BUCKET, key: 'secrets/x.json', bytes: 2 }, /key "secrets\/x.json"/],
  ])('archives a pointer to %s as bad-payload-ref, naming it, and reads nothing', async (_label, payloadRef, named) => {
    const { w, store } = setup();

    await w.send('urgent', JSON.stringify({ task: 'import-rows', id: 'foreign-1', payloadRef }));
    await w.run();

    expect(w.runs).toHaveLength(0);
    const [entry] = archived(w);
    expect(entry?.record).toMatchObject({ reason: 'bad-payload-ref', code: 'bad-payload-ref', jobId: expect.any(String) });
    expect(entry?.record?.detail).toMatch(named);
    expect((store as MemoryPayloadStore).calls.get).toBe(0);
  });

  it('archives a pointer whose object is missing or changed', async () => {
    const { w, store } = setup();
    await store.put(BUCKET, 'payloads/changed.json', '{"rows":[]}', '');

    await w.send(
      'urgent',
      JSON.stringify({ task: 'import-rows', id: 'gone', payloadRef: { bucket: BUCKET, key: 'payloads/gone.json', bytes: 2 } }),
    );
    const changed = { bucket: BUCKET, key: 'payloads/changed.json', bytes: 11, sha256: 'a'.repeat(64) };
    await w.send('urgent', JSON.stringify({ task: 'import-rows', id: 'changed', payloadRef: changed }));
    await w.run();

    expect(w.runs).toHaveLength(0);
    const messages = archived(w).map((a) => a.record?.detail ?? '');
    expect(messages.sort()).toEqual([
      expect.stringMatching(/gone.json, which is not there/),
      expect.stringMatching(/payloadRef: .*changed.json does not have its reference's sha256/),
    ]);
  });

  it('hands a message back when the object cannot be read for now, and runs it once it can', async () => {
    const inner = new MemoryPayloadStore();
    let failures = 1;
    const flaky: PayloadStore = {
      put: (b, k, body, sha) => inner.put(b, k, body, sha),
      delete: (b, k) => inner.delete(b, k),
      get: async (b, k) => {
        if (failures-- > 0) throw Object.assign(new Error('Slow Down'), { name: 'SlowDown' });
        return inner.get(b, k);
      },
    };
    const { w, publisher } = setup([importer], flaky);

    await publisher.publish('import-rows', rows(300), { id: 'big-4', queue: 'urgent' });
    await w.run({ forMs: 60_000 });

    expect(w.reports.flatMap((r) => r.jobs).map((j) => j.outcome)).toEqual(['deferred', 'succeeded']);
    expect(await w.jobs.get('big-4')).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(archived(w)).toHaveLength(0);
  });
});

describe('claim-check payloads: whose object a job deletes', () => {
  it('deletes only the job’s own object: a pointer to another job’s is read, run and left', async () => {
    const { w, publisher, store } = setup();
    const payload = rows(300);
    await publisher.publish('import-rows', payload, { id: 'owner', queue: 'urgent', delaySeconds: 3600 });
    const [owned] = [...(store as MemoryPayloadStore).objects.keys()];
    const key = (owned ?? '').slice(BUCKET.length + 1);
    const text = JSON.stringify(payload);
    const ref = { bucket: BUCKET, key, bytes: Buffer.byteLength(text) };

    // A hostile or careless publisher points another job at it: that job runs with the payload, and its success deletes nothing.
    await w.send('urgent', JSON.stringify({ task: 'import-rows', id: 'borrower', payloadRef: ref }));
    await w.run();

    expect(await w.jobs.get('borrower')).toMatchObject({ state: 'succeeded' });
    expect((store as MemoryPayloadStore).objects.has(`${BUCKET}/${key}`)).toBe(true);
  });
});

describe('claim-check results: a return value over 1 KB', () => {
  const reporter: TaskOptions = {
    name: 'build-report',
    queue: 'urgent',
    timeLimitSeconds: 5,
    run: (p) => ({ lines: Array.from({ length: (p as { kb: number }).kb }, (_, i) => `${i}:${'r'.repeat(1000)}`) }),
  };
  const report = (kb: number) => ({ lines: Array.from({ length: kb }, (_, i) => `${i}:${'r'.repeat(1000)}`) });

  it('is kept in the bucket under results/ before the record that points to it, and read back by publisher.result', async () => {
    const { w, publisher, store } = setup([reporter]);

    await publisher.publish('build-report', { kb: 300 }, { id: 'report-1', queue: 'urgent' });
    await w.run();

    const text = JSON.stringify(report(300));
    const sha256 = createHash('sha256').update(text).digest('hex');
    const record = await w.jobs.get('report-1');
    expect(record).toMatchObject({
      state: 'succeeded',
      resultBytes: Buffer.byteLength(text),
      resultRef: { bucket: BUCKET, key: `results/report-1/${sha256}.json`, bytes: Buffer.byteLength(text), sha256 },
    });
    expect(record?.result).toBeUndefined();
    expect((store as MemoryPayloadStore).objects.get(`${BUCKET}/results/report-1/${sha256}.json`)).toBe(text);
    await expect(publisher.result('report-1')).resolves.toMatchObject({ state: 'succeeded', result: report(300) });
  });

  it("gives an onSuccess hook the whole value (task's and app's), not undefined, and the record its reference", async () => {
    const heard: unknown[] = [];
    const store = new MemoryPayloadStore();
    const w = world(
      [{ ...reporter, onSuccess: (result) => void heard.push(['task', result]) }],
      { hooks: { onSuccess: (result) => void heard.push(['app', result]) } },
      { tracked: true, payloads: { store, bucket: BUCKET } },
    );
    const publisher = publisherOf(w);

    await publisher.publish('build-report', { kb: 20 }, { id: 'heard-1', queue: 'urgent' });
    await w.run();

    expect(heard).toEqual([
      ['task', report(20)],
      ['app', report(20)],
    ]);
    expect((await w.jobs.get('heard-1'))?.resultRef?.key).toMatch(/^results\/heard-1\//);
  });

  it('keeps a result of 1 KB or less on the record and puts nothing', async () => {
    const { w, publisher, store } = setup([{ ...reporter, run: () => 'x'.repeat(1000) }]);

    await publisher.publish('build-report', {}, { id: 'small', queue: 'urgent' });
    await w.run();

    expect(await w.jobs.get('small')).toMatchObject({ state: 'succeeded', result: JSON.stringify('x'.repeat(1000)) });
    expect((store as MemoryPayloadStore).calls.put).toBe(0);
  });

  it('when the put fails, ends the job succeeded all the same (the body does not run again) and records the size only', async () => {
    const inner = new MemoryPayloadStore();
    const refusing: PayloadStore = {
      put: async () => {
        throw Object.assign(new Error('Access Denied'), { name: 'AccessDenied' });
      },
      get: (b, k) => inner.get(b, k),
      delete: (b, k) => inner.delete(b, k),
    };
    const { w, publisher } = setup([reporter], refusing);

    await publisher.publish('build-report', { kb: 5 }, { id: 'report-2', queue: 'urgent' });
    await w.run({ forMs: 60_000 });

    expect(w.runs).toHaveLength(1);
    const record = await w.jobs.get('report-2');
    expect(record).toMatchObject({ state: 'succeeded', attempt: 1, resultBytes: JSON.stringify(report(5)).length });
    expect(record?.resultRef).toBeUndefined();
    await expect(publisher.result('report-2')).resolves.toEqual(
      expect.objectContaining({ state: 'succeeded', result: undefined, resultBytes: JSON.stringify(report(5)).length }),
    );
  });

  it('refuses to read a reference outside results/ (a record written by hand), naming it, and reads nothing', async () => {
    const store = new MemoryPayloadStore();
    await store.put(BUCKET, 'payloads/elsewhere.json', '{}', '');
    const read = storedResultReader(() => store);

    await expect(read({ bucket: BUCKET, key: 'payloads/elsewhere.json', bytes: 2 })).rejects.toThrow(
      /payloads\/elsewhere.json is not a result: results are kept under results\//,
    );
    expect(store.calls.get).toBe(0);
  });
});

/** `taskworker/testing` with a payload over the claim-check threshold: kept in an in-memory bucket, as a deployed version keeps it in S3. */
import { defineTask } from 'taskworker';
import { createTestSystem } from 'taskworker/testing';

const importRows = defineTask({
  name: 'import-rows',
  queue: 'imports',
  timeLimitSeconds: 5,
  run: (payload: { rows: string[] }) => ({ rows: payload.rows.length }),
});

describe('createTestSystem with a large payload', () => {
  it('publishes a 1 MB payload as a pointer and runs the task with the payload', async () => {
    const system = createTestSystem({ tasks: [importRows] });
    const rows = Array.from({ length: 1_000 }, (_, i) => `${i}:${'r'.repeat(1_000)}`);

    const { jobId } = await system.publish(importRows, { rows });
    const drained = await system.drain();

    expect(drained.succeeded).toBe(1);
    expect(await system.job(jobId)).toMatchObject({ state: 'succeeded', result: JSON.stringify({ rows: 1_000 }) });
  });

  it('archives a pointer to another bucket as bad-payload-ref', async () => {
    const system = createTestSystem({ tasks: [importRows] });

    await system.send('imports', JSON.stringify({ task: 'import-rows', payloadRef: { bucket: 'elsewhere', key: 'payloads/x', bytes: 2 } }));
    const drained = await system.drain();

    expect(drained.archived).toEqual({ 'bad-payload-ref': 1 });
    expect(system.archived()[0]?.record?.detail).toMatch(/bucket "elsewhere"/);
  });
});

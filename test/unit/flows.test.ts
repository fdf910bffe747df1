/** Jobs that wait for other jobs, on the test system (the real invocation on in-memory SQS and DynamoDB). */
import { DependencyError, type DependencyOutcome, defineTask, PublishOptionError } from 'taskworker';
import { createTestSystem } from 'taskworker/testing';

/** Every run, in order: task, job id, what it saw of its dependencies. */
function recorder() {
  const runs: Array<{ task: string; jobId: string; dependencies: readonly { jobId: string; state: string; result?: unknown }[] }> = [];
  const task = (name: string, behaviour: (payload: { fail?: boolean; value?: number }) => unknown = (p) => p.value ?? name) =>
    defineTask({
      name,
      queue: 'work',
      timeLimitSeconds: 5,
      maxRetries: 0,
      async run(payload: { fail?: boolean; value?: number }, ctx) {
        runs.push({ task: name, jobId: ctx.jobId, dependencies: ctx.dependencies });
        if (payload.fail) throw new Error(`${name} fails`);
        return behaviour(payload);
      },
    });
  return { runs, task };
}

describe('dependencies', () => {
  it('runs a diamond (A → B, C → D) with D once, after both B and C', async () => {
    const { runs, task } = recorder();
    const step = task('step');
    const system = createTestSystem({ tasks: [step] });
    const a = await system.publish(step, { value: 1 }, { id: 'A' });
    const b = await system.publish(step, { value: 2 }, { id: 'B', dependsOn: [a] });
    const c = await system.publish(step, { value: 3 }, { id: 'C', dependsOn: ['A'] });
    await system.publish(step, { value: 4 }, { id: 'D', dependsOn: [b, c] });
    expect(await system.job('D')).toMatchObject({ state: 'waiting', dependsOn: ['B', 'C'] });
    await system.drain();
    const order = runs.map((r) => r.jobId);
    expect(order.filter((id) => id === 'D')).toHaveLength(1);
    expect(order.indexOf('D')).toBeGreaterThan(Math.max(order.indexOf('B'), order.indexOf('C')));
    expect(order.indexOf('A')).toBeLessThan(Math.min(order.indexOf('B'), order.indexOf('C')));
    expect(runs.find((r) => r.jobId === 'D')?.dependencies).toEqual([
      { jobId: 'B', state: 'succeeded', result: 2 },
      { jobId: 'C', state: 'succeeded', result: 3 },
    ]);
    for (const id of ['A', 'B', 'C', 'D']) expect(await system.job(id)).toMatchObject({ state: 'succeeded' });
    expect((await system.job('A'))?.dependents?.map((d) => d.id).sort()).toEqual(['B', 'C']);
  });

  it('passes each step of a chain the result of the one before', async () => {
    const { runs, task } = recorder();
    const double = task('double', (p) => (p.value ?? 0) * 2);
    const system = createTestSystem({ tasks: [double] });
    const steps = await system.publisher.chain([
      { task: double, payload: { value: 5 } },
      { task: double, payload: {} },
      { task: double, payload: {} },
    ]);
    await system.drain();
    expect(runs.map((r) => r.jobId)).toEqual(steps.map((s) => s.jobId));
    expect(runs[1]?.dependencies[0]).toMatchObject({ jobId: steps[0]?.jobId, result: 10 });
    expect(runs[2]?.dependencies[0]).toMatchObject({ jobId: steps[1]?.jobId, state: 'succeeded' });
  });

  it('archives a dependent whose dependency failed (fail), transitively, and runs one that ignores it', async () => {
    const { runs, task } = recorder();
    const step = task('step');
    const system = createTestSystem({ tasks: [step] });
    await system.publish(step, { fail: true }, { id: 'broken' });
    await system.publish(step, {}, { id: 'strict', dependsOn: ['broken'] });
    await system.publish(step, {}, { id: 'after-strict', dependsOn: ['strict'] });
    await system.publish(step, {}, { id: 'lenient', dependsOn: ['broken'], onDependencyFailure: 'ignore' });
    await system.drain();
    expect(await system.job('strict')).toMatchObject({ state: 'archived', reason: 'dependency-failed' });
    expect((await system.job('strict'))?.lastError?.message).toContain('"broken"');
    expect(await system.job('after-strict')).toMatchObject({ state: 'archived', reason: 'dependency-failed' });
    expect(await system.job('lenient')).toMatchObject({ state: 'succeeded' });
    expect(runs.map((r) => r.jobId).sort()).toEqual(['broken', 'lenient']);
    expect(runs.find((r) => r.jobId === 'lenient')?.dependencies).toEqual([{ jobId: 'broken', state: 'archived', reason: 'exhausted' }]);
  });

  /** A chain of a producer returning `{ blob }` of `chars` characters and a reader that passes on what it sees of it. */
  async function producerAndReader(chars: number) {
    const big = defineTask({ name: 'big', queue: 'work', timeLimitSeconds: 5, run: () => ({ blob: 'x'.repeat(chars) }) });
    const seen: DependencyOutcome[] = [];
    const reader = defineTask({
      name: 'reader',
      queue: 'work',
      timeLimitSeconds: 5,
      maxRetries: 0,
      run(_payload: unknown, ctx) {
        const [dependency] = ctx.dependencies;
        // Not the getter of a result too large to keep, which throws: its size only.
        if (dependency)
          seen.push(
            dependency.resultBytes !== undefined
              ? { jobId: dependency.jobId, state: dependency.state, resultBytes: dependency.resultBytes }
              : dependency,
          );
        return (dependency?.result as { blob: string } | undefined)?.blob.length;
      },
    });
    const system = createTestSystem({ tasks: [big, reader] });
    await system.publisher.chain([
      { task: big, payload: {}, options: { id: 'producer' } },
      { task: reader, payload: {}, options: { id: 'consumer' } },
    ]);
    await system.drain();
    return { system, seen };
  }

  it('gives a dependent the result of a dependency over 1 KB, which the dispatcher kept in the bucket', async () => {
    const { system, seen } = await producerAndReader(2000);
    expect(seen).toEqual([{ jobId: 'producer', state: 'succeeded', result: { blob: 'x'.repeat(2000) } }]);
    expect(await system.job('producer')).toMatchObject({
      state: 'succeeded',
      resultBytes: 2011,
      resultRef: { key: expect.stringMatching(/^results\/producer\//), bytes: 2011 },
    });
    expect(await system.job('consumer')).toMatchObject({ state: 'succeeded', result: '2000' });
    expect(await system.publisher.result('producer')).toMatchObject({ state: 'succeeded', result: { blob: 'x'.repeat(2000) } });
  });

  it('gives a dependent reading a result too large to keep (over 10 MiB) a clear error naming the dependency and the size', async () => {
    const { system, seen } = await producerAndReader(10 * 1024 * 1024);
    const bytes = 10 * 1024 * 1024 + 11;
    expect(seen.map((d) => d.resultBytes)).toEqual([bytes]);
    const producer = await system.job('producer');
    expect(producer).toMatchObject({ state: 'succeeded', resultBytes: bytes });
    expect(producer?.resultRef).toBeUndefined();
    const consumer = await system.job('consumer');
    expect(consumer).toMatchObject({ state: 'archived', lastError: { type: 'ResultTooLargeError' } });
    expect(consumer?.lastError?.message).toContain(`"producer" was ${bytes} bytes`);
  });

  it('refuses at publish a dependency that is unknown, the job itself, or would close a cycle', async () => {
    const { task } = recorder();
    const step = task('step');
    const system = createTestSystem({ tasks: [step] });
    await expect(system.publish(step, {}, { dependsOn: ['nobody'] })).rejects.toThrow(DependencyError);
    await expect(system.publish(step, {}, { dependsOn: ['nobody'] })).rejects.toThrow(/"nobody".*no such job/);
    await expect(system.publish(step, {}, { id: 'me', dependsOn: ['me'] })).rejects.toThrow(PublishOptionError);
    await expect(
      system.publisher.publishBatch([
        { task: step, payload: {}, options: { id: 'x', dependsOn: ['y'] } },
        { task: step, payload: {}, options: { id: 'y', dependsOn: ['x'] } },
      ]),
    ).rejects.toThrow(/"y".*published after/);
    expect(await system.job('x')).toBeUndefined();
  });

  it('takes a dependency sent from another SDK after its dependent (it waits for the record to appear)', async () => {
    const { runs, task } = recorder();
    const step = task('step');
    const system = createTestSystem({ tasks: [step] });
    await system.send('work', JSON.stringify({ task: 'step', id: 'second', payload: {}, dependsOn: ['first'] }));
    await system.send('work', JSON.stringify({ task: 'step', id: 'first', payload: {} }));
    await system.drain();
    expect(runs.map((r) => r.jobId)).toEqual(['first', 'second']);
    expect(await system.job('second')).toMatchObject({ state: 'succeeded' });
  });

  it('archives a raw dependent whose dependency never appears, naming it, after the grace', async () => {
    const { runs, task } = recorder();
    const step = task('step');
    const system = createTestSystem({ tasks: [step] });
    await system.send('work', JSON.stringify({ task: 'step', id: 'orphan', payload: {}, dependsOn: ['ghost'] }));
    await system.drain();
    expect(runs).toHaveLength(0);
    expect(await system.job('orphan')).toMatchObject({ state: 'archived', reason: 'bad-dependency' });
    expect(system.archived().map((a) => a.record?.reason)).toEqual(['bad-dependency']);
    expect(system.archived()[0]?.record?.detail).toContain('"ghost"');
  });

  it('breaks a cycle two raw messages close (each naming the other): both archived, neither run', async () => {
    const { runs, task } = recorder();
    const system = createTestSystem({ tasks: [task('step')] });
    await system.send('work', JSON.stringify({ task: 'step', id: 'x', payload: {}, dependsOn: ['c'] }));
    await system.drain({ maxMs: 1000 });
    await system.send('work', JSON.stringify({ task: 'step', id: 'c', payload: {}, dependsOn: ['x'] }));
    await system.drain();
    expect(runs).toEqual([]);
    const [x, c] = [await system.job('x'), await system.job('c')];
    expect([x?.state, c?.state]).toEqual(['archived', 'archived']);
    expect([x?.reason, c?.reason].sort()).toEqual(['bad-dependency', 'dependency-failed']);
    expect(system.archived().find((a) => a.record?.reason === 'bad-dependency')?.record?.detail).toContain('cycle');
  });

  it('archives a raw message whose dependsOn is malformed, naming the field', async () => {
    const { task } = recorder();
    const system = createTestSystem({ tasks: [task('step')] });
    await system.send('work', JSON.stringify({ task: 'step', id: 'self', payload: {}, dependsOn: ['self'] }));
    await system.drain();
    expect(system.archived()[0]?.record).toMatchObject({ reason: 'malformed', code: 'bad-depends-on' });
  });
});

describe('cancel', () => {
  it('cancels a waiting job; its dependents learn it: fail ones archived, ignore ones run', async () => {
    const { runs, task } = recorder();
    const step = task('step');
    const system = createTestSystem({ tasks: [step] });
    await system.publish(step, {}, { id: 'slow', delaySeconds: 3600 });
    await system.publish(step, {}, { id: 'waiting', dependsOn: ['slow'] });
    await system.publish(step, {}, { id: 'strict', dependsOn: ['waiting'] });
    await system.publish(step, {}, { id: 'lenient', dependsOn: ['waiting'], onDependencyFailure: 'ignore' });
    await system.drain({ maxMs: 60_000 });
    expect((await system.job('strict'))?.state).toBe('waiting');
    expect(await system.publisher.cancel('waiting')).toMatchObject({ outcome: 'cancelled' });
    await system.drain({ maxMs: 60_000 });
    expect(await system.job('strict')).toMatchObject({ state: 'archived', reason: 'dependency-failed' });
    expect(await system.job('lenient')).toMatchObject({ state: 'succeeded' });
    expect(runs.map((r) => r.jobId)).toEqual(['lenient']);
    expect(runs[0]?.dependencies).toEqual([{ jobId: 'waiting', state: 'cancelled' }]);
  });
});

describe('tags', () => {
  it('finds a tag’s jobs in every state, newest first', async () => {
    const { task } = recorder();
    const step = task('step');
    const system = createTestSystem({ tasks: [step] });
    await system.publish(step, {}, { id: 'done', tags: ['tenant:42'] });
    await system.drain();
    system.clock.advance(1000);
    await system.publish(step, { fail: true }, { id: 'failing', tags: ['tenant:42', 'import'] });
    await system.drain();
    system.clock.advance(1000);
    await system.send(
      'work',
      JSON.stringify({ task: 'step', id: 'raw', payload: {}, tags: ['tenant:42'], dependsOn: ['failing'], onDependencyFailure: 'ignore' }),
    );
    await system.publish(step, {}, { id: 'other', tags: ['tenant:7'] });
    const before = await system.publisher.jobsByTag('tenant:42');
    expect(before.map((r) => [r.jobId, r.state])).toEqual([
      ['failing', 'archived'],
      ['done', 'succeeded'],
    ]);
    await system.drain();
    const after = await system.publisher.jobsByTag('tenant:42');
    expect(after.map((r) => [r.jobId, r.state])).toEqual([
      ['raw', 'succeeded'],
      ['failing', 'archived'],
      ['done', 'succeeded'],
    ]);
    expect((await system.job('raw'))?.tags).toEqual(['tenant:42']);
    expect((await system.job('done'))?.tags).toEqual(['tenant:42']);
    await system.publish(step, {}, { id: 'later', tags: ['tenant:42'], delaySeconds: 7200 });
    await system.drain({ maxMs: 60_000 });
    expect((await system.publisher.jobsByTag('tenant:42')).map((r) => [r.jobId, r.state])[0]).toEqual(['later', 'scheduled']);
  });

  it('refuses too many or bad tags, naming the value', async () => {
    const { task } = recorder();
    const step = task('step');
    const system = createTestSystem({ tasks: [step] });
    await expect(system.publish(step, {}, { tags: ['has space'] })).rejects.toThrow(/tags.*"has space"/);
    await expect(system.publish(step, {}, { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) })).rejects.toThrow(/11 tags; at most 10/);
    await expect(system.publish(step, {}, { tags: ['x'.repeat(65)] })).rejects.toThrow(PublishOptionError);
  });
});

describe('chord', () => {
  it('runs the callback once, after every member, with every result in member order', async () => {
    const { runs, task } = recorder();
    const member = task('member', (p) => (p.value ?? 0) * 10);
    const total = task('total');
    const system = createTestSystem({ tasks: [member, total] });
    const members = Array.from({ length: 200 }, (_, i) => ({ task: member, payload: { value: i } }));
    const { callback } = await system.publisher.chord(members, { task: total, payload: {}, options: { id: 'sum' } });
    await system.drain();
    const callbacks = runs.filter((r) => r.task === 'total');
    expect(callbacks).toHaveLength(1);
    expect(runs.indexOf(callbacks[0] as (typeof runs)[number])).toBe(200);
    expect(callbacks[0]?.dependencies.map((d) => d.result)).toEqual(members.map((_, i) => i * 10));
    expect(await system.job(callback.jobId)).toMatchObject({ state: 'succeeded', awaits: 200 });
    expect(await system.job('sum.7')).toMatchObject({ state: 'succeeded', memberOf: { id: 'sum', size: 200, index: 7 } });
  });

  it('runs the callback of an empty group at once', async () => {
    const { runs, task } = recorder();
    const total = task('total');
    const system = createTestSystem({ tasks: [total] });
    await system.publisher.chord([], { task: total, payload: {} });
    await system.drain();
    expect(runs).toHaveLength(1);
    expect(runs[0]?.dependencies).toEqual([]);
  });
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestSystem, runTask } from 'taskworker/testing';
import sendWelcomeEmail from './send-welcome-email.ts';

test('sends the email', async () => {
  const run = await runTask(sendWelcomeEmail, { to: 'ana@example.com', name: 'Ana' });
  assert.equal(run.status, 'succeeded');
  assert.deepEqual(run.result, { sent: 'Welcome, Ana!', to: 'ana@example.com', attempt: 1 });
});

test('archives a payload without an address at once, without retries', async () => {
  const run = await runTask(sendWelcomeEmail, { name: 'Ana' });
  assert.deepEqual(run.verdict, { kind: 'archive', reason: 'invalid-payload' });
});

test('runs end to end in memory: publish, dispatch, a job record that says succeeded', async () => {
  const system = createTestSystem({ tasks: [sendWelcomeEmail] });
  const { jobId } = await system.publish(sendWelcomeEmail, { to: 'bo@example.com', name: 'Bo' });
  const unreachable = await system.publish(sendWelcomeEmail, { to: 'x@example.invalid', name: 'X' });
  const drained = await system.drain();
  assert.equal(drained.succeeded, 1);
  assert.equal((await system.job(jobId))?.state, 'succeeded');
  assert.equal((await system.job(unreachable.jobId))?.reason, 'unrecoverable');
});

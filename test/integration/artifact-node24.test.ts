import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { createVersionTables } from '../../lib/adapters/dynamo-admin';
import { createVersionQueues } from '../../lib/adapters/sqs-admin';
import { resolveConfig, type TaskworkerConfigInput } from '../../lib/config/app-config';
import type { DispatcherSummary } from '../../lib/settle/report';
import { loadConfigModule } from '../../lib/tasks/build';
import { type EmulatorHarness, FIXTURE_CONFIG, startHarness, stopHarness, tempFile } from '../helpers/emulators';
import { dispatcherAssetDir, synthStack } from '../helpers/infra';
import { readJournal } from '../helpers/run';

const { nodeBinary } = require('../../scripts/node-runtime.cjs') as {
  nodeBinary: (major: number, o: { install: boolean }) => string | undefined;
};
const NODE24 = nodeBinary(24, { install: true });

/**
 * What Lambda does with the deployed asset, on Lambda's Node major: load index.js from the asset
 * directory (no node_modules anywhere near it), call `handler(event, context)` once, print the result.
 */
const LAMBDA_STAND_IN = `
const { randomUUID } = require('node:crypto');
const { handler } = require(process.argv[2]);
const deadline = Date.now() + Number(process.argv[3]);
const context = {
  functionName: process.env.AWS_LAMBDA_FUNCTION_NAME, functionVersion: '$LATEST', memoryLimitInMB: '1024',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:' + process.env.AWS_LAMBDA_FUNCTION_NAME,
  awsRequestId: randomUUID(), logGroupName: 'local', logStreamName: 'local', callbackWaitsForEmptyEventLoop: true,
  getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()), done() {}, fail() {}, succeed() {},
};
handler({ source: 'taskworker.schedule' }, context).then(
  (summary) => { process.stdout.write('RESULT ' + JSON.stringify({ node: process.version, summary }) + '\\n'); process.exit(0); },
  (error) => { process.stderr.write('FAILED ' + (error && error.stack || error) + '\\n'); process.exit(1); },
);
`;

function runNode24(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE24 as string, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

(NODE24 ? describe : describe.skip)('the deployed dispatcher artifact on Node 24 (nodejs24.x) against the emulators', () => {
  let h: EmulatorHarness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => stopHarness(h));

  it('runs a published task from the minified bundle, records it, and emits EMF metrics', async () => {
    // The asset `cdk deploy` would upload: built by the stack's bundling, outside the project tree.
    const input = (await loadConfigModule(FIXTURE_CONFIG)) as TaskworkerConfigInput;
    const assetDir = dispatcherAssetDir(synthStack({ version: 'v24', config: input, configFile: FIXTURE_CONFIG, bundling: true }));
    const config = resolveConfig(input);
    const urls = await createVersionQueues(h.sqs, config, 'v24');
    const dynamo = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: h.emulators.dynamodbEndpoint,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    const tables = await createVersionTables(dynamo, config, 'v24');
    dynamo.destroy();
    const journal = tempFile('journal.jsonl');
    const sent = await h.sqs.send(
      new SendMessageCommand({
        QueueUrl: urls.queues.urgent,
        MessageBody: JSON.stringify({ task: 'record', payload: { journal, n: 24 } }),
      }),
    );

    const runner = join(mkdtempSync(join(tmpdir(), 'tw-lambda-')), 'invoke.cjs');
    writeFileSync(runner, LAMBDA_STAND_IN);
    // 15 s left in the invocation: the task's limit fits many times over however slowly a loaded
    // machine starts the pool's threads (with 4 s, a slow start left no time to start the task,
    // and the dispatcher rightly received nothing).
    const result = await runNode24([runner, join(assetDir, 'index.js'), '15000'], {
      PATH: process.env.PATH,
      // What the stack sets (infra/dispatcher-function.ts), pointed at the emulators.
      NODE_OPTIONS: '--enable-source-maps',
      TASKWORKER_VERSION: 'v24',
      TASKWORKER_QUEUE_URLS: JSON.stringify({ queues: urls.queues, archive: urls.archive }),
      TASKWORKER_JOBS_TABLE: tables.jobs,
      TASKWORKER_STATS_TABLE: tables.stats,
      TASKWORKER_LOG_LEVEL: 'WARN',
      POWERTOOLS_SERVICE_NAME: 'twtest',
      POWERTOOLS_METRICS_NAMESPACE: 'Taskworker',
      AWS_LAMBDA_FUNCTION_NAME: 'twtest-v24-dispatcher',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL_SQS: h.emulators.sqsEndpoint,
      AWS_ENDPOINT_URL_DYNAMODB: h.emulators.dynamodbEndpoint,
    });

    expect(result.stderr).not.toMatch(/FAILED/);
    expect(result.code).toBe(0);
    const line = result.stdout.split('\n').find((l) => l.startsWith('RESULT '));
    const { node, summary } = JSON.parse(line?.slice('RESULT '.length) ?? '{}') as { node: string; summary: DispatcherSummary };
    expect(node).toMatch(/^v24\./);
    expect(summary.queues.urgent).toMatchObject({ received: 1, succeeded: 1 });
    expect(readJournal(journal)).toEqual([expect.objectContaining({ task: 'record', n: 24, jobId: sent.MessageId, attempt: 1 })]);

    const emf = result.stdout
      .split('\n')
      .filter((l) => l.startsWith('{') && l.includes('"_aws"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(emf).toContainEqual(
      expect.objectContaining({ service: 'twtest', version: 'v24', queue: 'urgent', task: 'record', JobsSucceeded: 1 }),
    );
    expect(emf).toContainEqual(
      expect.objectContaining({ version: 'v24', Receives: expect.any(Number), EmptyReceives: expect.any(Number) }),
    );
  }, 180_000); // A hang guard: the synth with bundling and a 15 s invocation take minutes on a loaded machine.
});

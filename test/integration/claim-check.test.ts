/**
 * Claim-check payloads on the emulators (fauxqs's SQS and S3, dynalite) with the real dispatcher
 * runtime: a 5 MB payload published from TypeScript is put in the version's bucket and runs (the task
 * sees it), and its object is gone once the job has succeeded; a 5 MB payload put to S3 by a
 * boto3 script, which then sends the pointer with SQS, runs too and its object goes as well; a pointer to another bucket is
 * archived as bad-payload-ref, naming it, and never runs.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { type ProvisionedVersion, provisionVersion } from '../../lib/local/version';
import { silentLogger } from '../../lib/ports';
import type { JobRecord } from '../../lib/track/job-record';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { cli } from '../helpers/cli';
import {
  buildFixtureBundle,
  type EmulatorHarness,
  FIXTURE_CONFIG,
  keepDispatching,
  type RunningDispatcher,
  startHarness,
  stopHarness,
  tempFile,
} from '../helpers/emulators';
import { eventually } from '../helpers/run';
import { describeWithTools } from '../helpers/tools';

let h: EmulatorHarness;
let s3: S3Client;
let dynamo: DynamoDBClient;
let v: ProvisionedVersion;
let running: RunningDispatcher | undefined;

beforeAll(async () => {
  h = await startHarness();
  const local = { region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } };
  s3 = new S3Client({ ...local, endpoint: h.emulators.sqsEndpoint });
  dynamo = new DynamoDBClient({ ...local, endpoint: h.emulators.dynamodbEndpoint });
  v = await provisionVersion({ bundle: await buildFixtureBundle(), version: 'cc1', sqs: h.sqs, dynamo, s3 });
  running = keepDispatching(v.dispatcher({ tracked: true, logger: silentLogger, workerId: 'cc-d1' }));
}, 120_000);

afterAll(async () => {
  await running?.stop();
  s3?.destroy();
  dynamo?.destroy();
  await stopHarness(h);
});

const record = (id: string) => v.jobs.get(id) as Promise<JobRecord | undefined>;
const digest = (text: string) => createHash('sha256').update(text).digest('hex');
const objects = async () =>
  ((await s3.send(new ListObjectsV2Command({ Bucket: v.payloadBucket, Prefix: 'payloads/' }))).Contents ?? []).map((o) => o.Key);

describe('claim-check payloads on the emulators', () => {
  it('provisions the version’s bucket, named from its queue URLs', () => {
    expect(v.payloadBucket).toBe('twtest-cc1-000000000000-us-east-1');
  });

  it('runs a 5 MB payload published from TypeScript, and deletes its object once the job has succeeded', async () => {
    const payload = { rows: Array.from({ length: 5_000 }, (_, i) => `${i}:${'x'.repeat(1_000)}`) };
    const text = JSON.stringify(payload);
    expect(Buffer.byteLength(text)).toBeGreaterThan(5_000_000);

    const started = Date.now();
    const { jobId } = await v.publisher.publish('measure', payload, { id: 'big-ts-1' });
    const key = `payloads/big-ts-1/${digest(text)}.json`;
    const head = await s3.send(new HeadObjectCommand({ Bucket: v.payloadBucket, Key: key }));
    expect(head.ContentLength).toBe(Buffer.byteLength(text));

    await eventually('the 5 MB job to succeed', async () => (await record(jobId))?.state === 'succeeded', 30_000);
    const elapsed = Date.now() - started;
    expect((await record(jobId))?.result).toEqual(JSON.stringify({ bytes: Buffer.byteLength(text), sha256: digest(text) }));
    await eventually('its object to be deleted', async () => !(await objects()).includes(key), 10_000);
    process.stdout.write(`claim check: 5 MB publish to succeeded in ${elapsed} ms\n`);
  }, 60_000);

  describeWithTools('claim-check', 'boto3')('from a Python publisher (boto3)', () => {
    it('runs a 5 MB payload that a boto3 script put in S3 and pointed to with SQS, and deletes its object once the job has succeeded', async () => {
      const script = tempFile('publish_large.py');
      writeFileSync(script, BOTO3_SCRIPT);
      const payload = { rows: Array.from({ length: 5_000 }, (_, i) => `${i}:${'y'.repeat(1_000)}`) };
      const payloadFile = tempFile('payload.json');
      writeFileSync(payloadFile, JSON.stringify(payload));
      // Asynchronously: the emulators answer from this process.
      await promisify(execFile)('python3', [script, v.urls.queues.urgent as string, v.payloadBucket as string, 'boto3-1', payloadFile], {
        env: {
          ...process.env,
          AWS_ENDPOINT_URL: h.emulators.sqsEndpoint,
          AWS_ACCESS_KEY_ID: 'test',
          AWS_SECRET_ACCESS_KEY: 'test',
          AWS_DEFAULT_REGION: 'us-east-1',
        },
        timeout: 30_000,
      });

      await eventually('the boto3 job to succeed', async () => (await record('boto3-1'))?.state === 'succeeded', 30_000);
      const text = JSON.stringify(payload);
      // Python's json.dumps spaces its separators unless told not to: the script writes the compact form, so the task sees the same JSON.
      expect((await record('boto3-1'))?.result).toEqual(JSON.stringify({ bytes: Buffer.byteLength(text), sha256: digest(text) }));
      await eventually('its object to be deleted', async () => (await objects()).every((k) => !k?.startsWith('payloads/boto3-1/')), 10_000);
    }, 60_000);
  });

  it('keeps a 1 MB result in the bucket under results/, and jobs wait and publisher.result read it back', async () => {
    const { jobId } = await v.publisher.publish('measure', { resultBytes: 1_000_000 }, { id: 'big-result-1' });
    await eventually('the job to succeed', async () => (await record(jobId))?.state === 'succeeded', 30_000);

    const kept = await record(jobId);
    expect(kept?.result).toBeUndefined();
    expect(kept?.resultRef).toMatchObject({
      bucket: v.payloadBucket,
      key: expect.stringMatching(/^results\/big-result-1\/[0-9a-f]{64}\.json$/),
    });
    expect(kept?.resultBytes).toBeGreaterThan(1_000_000);
    const head = await s3.send(new HeadObjectCommand({ Bucket: v.payloadBucket, Key: kept?.resultRef?.key }));
    expect(head.ContentLength).toBe(kept?.resultBytes);

    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_SQS: h.emulators.sqsEndpoint,
      AWS_ENDPOINT_URL_S3: h.emulators.sqsEndpoint,
      AWS_ENDPOINT_URL_DYNAMODB: h.emulators.dynamodbEndpoint,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_REGION: 'us-east-1',
    });
    try {
      const waited = await cli('jobs', 'wait', jobId, '--json', '--version', 'cc1', '--config', FIXTURE_CONFIG);
      expect(waited.err).toBe('');
      expect(waited.code).toBe(0);
      const result = JSON.parse(waited.out) as { state: string; result: { filler: string } };
      expect(result.state).toBe('succeeded');
      expect(result.result.filler).toBe('z'.repeat(1_000_000));
      const shown = await cli('jobs', 'show', jobId, '--version', 'cc1', '--config', FIXTURE_CONFIG);
      expect(shown.out).toMatch(
        new RegExp(`result\\s+${kept?.resultBytes} bytes of JSON, kept in s3://${v.payloadBucket}/results/big-result-1/`),
      );
    } finally {
      process.env = saved;
    }
    const awaited = await v.publisher.result(jobId);
    expect(awaited).toMatchObject({ state: 'succeeded', resultBytes: kept?.resultBytes });
    expect((awaited as { result: { filler: string } }).result.filler).toHaveLength(1_000_000);
  }, 60_000);

  it('archives a pointer to another bucket as bad-payload-ref, naming it, and never runs it', async () => {
    const body = JSON.stringify({
      task: 'measure',
      id: 'foreign-1',
      payloadRef: { bucket: 'someone-elses-bucket', key: 'payloads/x.json', bytes: 2 },
    });
    await v.queues.sendBatch(v.urls.queues.urgent as string, [{ id: '0', body }]);

    let archived: ReturnType<typeof readArchiveRecord>;
    await eventually(
      'the foreign pointer in the archive',
      async () => {
        const out = await h.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: v.urls.archive,
            MaxNumberOfMessages: 10,
            MessageAttributeNames: ['All'],
            VisibilityTimeout: 0,
          }),
        );
        const attributes = (m: NonNullable<typeof out.Messages>[number]) =>
          Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, a]) => [k, a.StringValue ?? '']));
        archived = (out.Messages ?? []).map((m) => readArchiveRecord(attributes(m))).find((r) => r?.envelopeId === 'foreign-1');
        return archived !== undefined;
      },
      30_000,
    );
    expect(archived).toMatchObject({ reason: 'bad-payload-ref', code: 'bad-payload-ref' });
    expect(archived?.detail).toContain('"someone-elses-bucket"');
    expect(await record('foreign-1')).toBeUndefined();
  }, 60_000);
});

/** What docs/large-payloads.md's boto3 example does: put the payload's JSON under payloads/, then send the pointer. */
const BOTO3_SCRIPT = `
import hashlib, json, sys
import boto3

queue_url, bucket, job_id, payload_file = sys.argv[1:5]
with open(payload_file) as f:
    payload = json.load(f)
body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
sha256 = hashlib.sha256(body).hexdigest()
key = f"payloads/{job_id}/{sha256}.json"
boto3.client("s3").put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")
boto3.client("sqs").send_message(
    QueueUrl=queue_url,
    MessageBody=json.dumps({
        "task": "measure",
        "id": job_id,
        "payloadRef": {"bucket": bucket, "key": key, "bytes": len(body), "sha256": sha256},
    }),
)
`;

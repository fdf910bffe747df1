/**
 * A publisher that the AWS SDK finds no region for (none given, no AWS_REGION, no profile with one)
 * fails with one typed error that says how to give one and how to reach a running `taskworker dev`,
 * never the SDK's "Region is missing". (test/integration/dev-cli.test.ts runs the same from a fresh
 * `tsx` process, and Publisher.forLocalDev against a running dev.)
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalDevNotFoundError, MissingRegionError } from '../../lib/errors';
import { Publisher } from '../../lib/publish/publisher';

const config = { app: 'shop', queues: [{ name: 'default', priority: 10 }] };
const saved = { ...process.env };

beforeEach(() => {
  for (const name of Object.keys(process.env)) if (name.startsWith('AWS_')) delete process.env[name];
  // No profile to read a region from, whatever this machine has in ~/.aws.
  process.env.AWS_CONFIG_FILE = join(mkdtempSync(join(tmpdir(), 'tw-no-aws-')), 'config');
  process.env.AWS_SHARED_CREDENTIALS_FILE = process.env.AWS_CONFIG_FILE;
});
afterEach(() => {
  process.env = { ...saved };
});

describe('a publisher with no region', () => {
  it('fails its publish with one MissingRegionError naming SQS and the ways to reach a dev', async () => {
    const failed = await new Publisher({ config, version: 'v1' }).publish('send-email', {}, { queue: 'default' }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(MissingRegionError);
    expect(failed).toMatchObject({ name: 'MissingRegionError', service: 'SQS' });
    expect((failed as Error).message).toBe(
      "No AWS region for SQS: set AWS_REGION (or a profile's region), or pass clientConfig.region. " +
        'To reach a running `taskworker dev`, export the line it prints, or build the publisher with Publisher.forLocalDev({ config })',
    );
  });

  it('with a region it goes on to the endpoint (here one that refuses the connection)', async () => {
    process.env.AWS_REGION = 'eu-west-1';
    const publisher = new Publisher({
      config,
      version: 'v1',
      sqs: { clientConfig: { endpoint: 'http://127.0.0.1:9', maxAttempts: 1, credentials: { accessKeyId: 'a', secretAccessKey: 'b' } } },
    });
    const failed = await publisher.publish('send-email', {}, { queue: 'default' }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(Error);
    expect(failed).not.toBeInstanceOf(MissingRegionError);
  });
});

describe('Publisher.forLocalDev', () => {
  it('with no taskworker dev running there: one LocalDevNotFoundError naming the directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tw-no-dev-'));
    expect(() => Publisher.forLocalDev({ config, from: dir })).toThrow(LocalDevNotFoundError);
    expect(() => Publisher.forLocalDev({ config, from: dir })).toThrow(`No taskworker dev is running in ${dir} or above it`);
  });
});

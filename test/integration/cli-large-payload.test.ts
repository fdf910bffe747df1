/**
 * `taskworker publish TASK --payload @FILE` against a running `taskworker dev`: a 300 KB payload
 * read from a file goes to the version's bucket on fauxqs's S3 (the CLI finds S3 on the dev
 * stack's endpoint), and the dev stack's dispatcher process (its S3 endpoint from the stack's
 * environment) runs it with the payload; a missing file or one that is not JSON is a usage error.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { cli } from '../helpers/cli';
import { FIXTURE_CONFIG, tempFile } from '../helpers/emulators';
import { eventually } from '../helpers/run';

describe('taskworker publish --payload @FILE', () => {
  let stack: LocalStack;
  const saved = { ...process.env };

  beforeAll(async () => {
    stack = await startLocalStack({ configFile: FIXTURE_CONFIG });
    Object.assign(process.env, stack.env);
  }, 120_000);
  afterAll(async () => {
    process.env = saved;
    await stack?.stop();
  });

  it('reads a 300 KB payload from a file; the dev stack’s dispatcher runs it with that payload', async () => {
    const payload = { rows: Array.from({ length: 300 }, (_, i) => `${i}:${'z'.repeat(1_000)}`) };
    const text = JSON.stringify(payload);
    const file = tempFile('payload.json');
    writeFileSync(file, text);

    const result = await cli(
      'publish',
      'measure',
      '--payload',
      `@${file}`,
      '--version',
      stack.version,
      '--config',
      FIXTURE_CONFIG,
      '--json',
    );

    expect(result.code).toBe(0);
    const { jobId } = JSON.parse(result.out) as { jobId: string };
    await eventually('the job to succeed', async () => (await stack.jobs.get(jobId))?.state === 'succeeded', 30_000);
    const seen = { bytes: Buffer.byteLength(text), sha256: createHash('sha256').update(text).digest('hex') };
    expect((await stack.jobs.get(jobId))?.result).toEqual(JSON.stringify(seen));
  }, 60_000);

  it.each([
    [['@no-such-payload.json'], /--payload @no-such-payload.json: cannot read "no-such-payload.json" \(ENOENT\)/],
    [['@'], /--payload @: expected a file name after @/],
  ])('refuses %j with exit code 2, naming the file', async (payload, message) => {
    const result = await cli('publish', 'measure', '--payload', ...payload, '--version', stack.version, '--config', FIXTURE_CONFIG);
    expect(result.code).toBe(2);
    expect(result.err).toMatch(message);
  });

  it('refuses a file that is not JSON, naming it', async () => {
    const file = tempFile('broken.json');
    writeFileSync(file, '{"rows": [');
    const result = await cli('publish', 'measure', '--payload', `@${file}`, '--version', stack.version, '--config', FIXTURE_CONFIG);
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/broken\.json" is not valid JSON/);
  });
});

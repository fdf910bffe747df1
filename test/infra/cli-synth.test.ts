import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../lib/tasks/build';

const CDK = join(PACKAGE_ROOT, 'node_modules', '.bin', 'cdk');

/** `cdk synth` as a user runs it, offline: no credentials, no metadata service, no notices or telemetry. */
function cdkSynth(...args: string[]) {
  const outdir = mkdtempSync(join(tmpdir(), 'tw-cdk-cli-'));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    AWS_EC2_METADATA_DISABLED: 'true',
    CDK_DISABLE_CLI_TELEMETRY: 'true',
    AWS_REGION: 'us-east-1',
  };
  const result = spawnSync(CDK, ['synth', '--quiet', '--no-notices', '-o', outdir, ...args], {
    cwd: PACKAGE_ROOT,
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { ...result, outdir };
}

describe('npx cdk synth (the CLI pinned in package.json)', () => {
  it('synthesizes Taskworker-taskworker-v1 from taskworker.config.ts, building the dispatcher artifact', () => {
    const result = cdkSynth('-c', 'version=v1');
    expect(result.stderr).not.toMatch(/Error/);
    expect(result.status).toBe(0);
    const template = JSON.parse(readFileSync(join(result.outdir, 'Taskworker-taskworker-v1.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const fn = Object.values(template.Resources).find((r) => r.Type === 'AWS::Lambda::Function');
    expect(fn?.Properties).toMatchObject({ FunctionName: 'taskworker-v1-dispatcher', Runtime: 'nodejs24.x' });
    const hash = (fn?.Properties.Code as { S3Key?: string } | undefined)?.S3Key?.replace('.zip', '');
    expect(existsSync(join(result.outdir, `asset.${hash}`, 'index.js'))).toBe(true);
    expect(existsSync(join(result.outdir, `asset.${hash}`, 'tasks.cjs'))).toBe(true);
  });

  it('refuses to synthesize without a version, saying which option is missing', () => {
    const result = cdkSynth();
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('Invalid config version (cdk -c version=…) = undefined: expected lowercase letters, digits and "-"');
  });

  it('refuses a malformed version', () => {
    const result = cdkSynth('-c', 'version=Release 1');
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('Invalid config version (cdk -c version=…) = "Release 1"');
  });
});

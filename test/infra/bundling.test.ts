import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTaskBundle } from '../../lib/tasks/bundle';
import { dispatcherAssetDir, synthStack } from '../helpers/infra';

// The one in-process synth that keeps real bundling (the others skip it for speed).
describe('dispatcher asset (real bundling)', () => {
  const synth = synthStack({ bundling: true });
  const dir = dispatcherAssetDir(synth);

  it('is exactly the buildArtifact output: index.js beside tasks.cjs, with source maps', () => {
    expect(readdirSync(dir).sort()).toEqual(['index.js', 'index.js.map', 'tasks.cjs', 'tasks.cjs.map']);
  });

  it('is minified, with the AWS SDK bundled in (no runtime SDK needed)', () => {
    const index = readFileSync(join(dir, 'index.js'), 'utf8');
    // Only the SDK's optional CRT signer stays a (guarded) require; no client comes from the runtime.
    expect(index).not.toMatch(/require\("@aws-sdk\/(?!signature-v4-crt")/);
    expect(index).toContain('sqs.');
    // Minified: a few long lines (template literals keep their newlines), not tens of thousands.
    expect(index.split('\n').length).toBeLessThan(200);
    expect(index).toMatch(/sourceMappingURL=index\.js\.map/);
  });

  it('carries the example app: its config and every task module', () => {
    const bundle = loadTaskBundle(join(dir, 'tasks.cjs'));
    expect(bundle.config.app).toBe('taskworker');
    expect(bundle.tasks.map((t) => t.name).sort()).toEqual(
      [
        'award-loyalty-points',
        'build-report',
        'charge-card',
        'rebuild-index',
        'resize-image',
        'send-notification',
        'send-order-confirmation',
        'sync-crm',
      ].sort(),
    );
    expect(existsSync(join(dir, 'runner.js'))).toBe(false);
  });

  it('is addressed by its content hash, so an unchanged artifact does not redeploy', () => {
    const again = dispatcherAssetDir(synthStack({ bundling: true }));
    expect(again.split('asset.')[1]).toBe(dir.split('asset.')[1]);
  });
});

/**
 * Child process of the CDK asset bundling (`infra/artifact.ts`): builds the dispatcher artifact
 * with `buildArtifact` into the asset directory. Argument: one JSON `BuildRequest`.
 */

import { checkCrontabs } from '../lib/policy/cron-expressions';
import { buildArtifact } from '../lib/tasks/build';
import { loadTaskBundle } from '../lib/tasks/bundle';
import type { BuildRequest } from './artifact';

async function main(): Promise<void> {
  const request = JSON.parse(process.argv[2] ?? '{}') as Partial<BuildRequest>;
  if (typeof request.configFile !== 'string' || typeof request.outDir !== 'string') {
    throw new Error(`usage: build-artifact.ts '{"configFile":…,"outDir":…}' (got ${process.argv[2]})`);
  }
  const artifact = await buildArtifact({
    configFile: request.configFile,
    ...(request.tasksDir ? { tasksDir: request.tasksDir } : {}),
    outDir: request.outDir,
    minify: request.minify ?? true,
    bundleAwsSdk: request.bundleAwsSdk ?? true,
  });
  // Fail the synth, not the first invocation, when a task does not fit the config (unknown
  // queue, time limit beyond the queue's visibility, attempts past the DLQ redrive).
  checkCrontabs(loadTaskBundle(artifact.tasksFile).config);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

/**
 * The dispatcher's Lambda code: exactly the artifact `lib/build.ts` builds for `taskworker dev`.
 *
 * Why not NodejsFunction: it bundles one entry with its own esbuild options, while the dispatcher
 * is two files that must sit side by side (`index.js`, the handler, and `tasks.cjs`, the config +
 * task modules + worker runtime that every pool thread loads by path). `afterBundling` could emit
 * tasks.cjs, but index.js would still come from a second, differently configured esbuild call,
 * and what Lambda runs would no longer be what the local runtime and the tests run. So the code
 * is a plain asset whose local bundling calls `buildArtifact` itself — one packaging path.
 *
 * `ILocalBundling.tryBundle` is synchronous and `buildArtifact` is not, so bundling runs
 * `infra/build-artifact.ts` in a child Node process (TypeScript through tsx). No Docker: if the
 * local build fails, synth fails with esbuild's message instead of falling back to a container.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { AssetHashType, type BundlingOptions, DockerImage, type ILocalBundling } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { TaskworkerConfig } from '../lib/config/app-config';
import { FROM_SOURCE, PACKAGE_ROOT } from '../lib/tasks/package-root';

export type DispatcherCodeProps = {
  /** @default the config's `tasksDir`, relative to the config file */
  readonly tasksDir?: string;
  /** @default true */
  readonly minify?: boolean;
  /** Bundle the AWS SDK, or leave it to the runtime (see BENCHMARKS.md). @default true */
  readonly bundleAwsSdk?: boolean;
} & (
  | {
      /** The app config module the artifact is built from (it names the tasks directory). */
      readonly configFile: string;
      readonly config?: never;
    }
  | {
      /** A resolved config given in the CDK app: bundled as JSON, with `tasksDir` (required then). */
      readonly config: TaskworkerConfig;
      readonly tasksDir: string;
      readonly configFile?: never;
    }
);

/** The options handed to `infra/build-artifact.ts` (as one JSON argument). */
export interface BuildRequest {
  readonly configFile: string;
  readonly tasksDir?: string;
  readonly outDir: string;
  readonly minify: boolean;
  readonly bundleAwsSdk: boolean;
}

/** Runs `buildArtifact` into the asset's output directory. */
export class ArtifactBundler implements ILocalBundling {
  constructor(private readonly props: DispatcherCodeProps) {}

  tryBundle(outputDir: string, _options: BundlingOptions): boolean {
    // A config given as an object travels to the build as a JSON module of its own.
    const scratch = this.props.config ? mkdtempSync(join(tmpdir(), 'taskworker-config-')) : undefined;
    try {
      const configFile = scratch ? join(scratch, 'taskworker.config.json') : resolve(this.props.configFile as string);
      if (scratch) writeFileSync(configFile, JSON.stringify(this.props.config));
      const request: BuildRequest = {
        configFile,
        ...(this.props.tasksDir ? { tasksDir: resolve(this.props.tasksDir) } : {}),
        outDir: outputDir,
        minify: this.props.minify ?? true,
        bundleAwsSdk: this.props.bundleAwsSdk ?? true,
      };
      const result = spawnSync(process.execPath, [...BUILD_ARTIFACT_COMMAND, JSON.stringify(request)], {
        cwd: PACKAGE_ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      if (result.error) throw new Error(`Cannot start the dispatcher artifact build: ${result.error.message}`, { cause: result.error });
      if (result.status !== 0) {
        throw new Error(
          `Building the dispatcher artifact failed (exit ${result.status ?? result.signal}):\n${result.stderr}${result.stdout}`,
        );
      }
      return true;
    } finally {
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    }
  }
}

/**
 * The child process that builds the artifact: the compiled script in an installed package, the
 * TypeScript source through tsx in this repository.
 */
const BUILD_ARTIFACT_COMMAND = FROM_SOURCE
  ? ['--import', 'tsx', join(PACKAGE_ROOT, 'infra', 'build-artifact.ts')]
  : [join(PACKAGE_ROOT, 'dist', 'cjs', 'infra', 'build-artifact.js')];

/**
 * Lambda code built by {@link ArtifactBundler}. Its hash is the output's, so a change to any task,
 * the config or the library redeploys the function, and nothing else does. With bundling skipped
 * (`-c aws:cdk:bundling-stacks=[]`, as the template tests do) nothing is built or fingerprinted.
 *
 * @example
 * ```ts
 * new lambda.Function(stack, 'Dispatcher', { code: dispatcherCode({ configFile: 'taskworker.config.ts' }), ... });
 * ```
 */
export function dispatcherCode(props: DispatcherCodeProps): lambda.AssetCode {
  return lambda.Code.fromAsset(props.configFile ? dirname(resolve(props.configFile)) : resolve(props.tasksDir as string), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Required by the type; never pulled or run, since local bundling always succeeds or throws.
      image: DockerImage.fromRegistry('taskworker/no-docker-bundling'),
      local: new ArtifactBundler(props),
    },
  });
}

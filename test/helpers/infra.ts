import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { stackName, TaskworkerStack, type TaskworkerStackProps } from '../../infra/stack';
import { resolveConfig, type TaskworkerConfig, type TaskworkerConfigInput } from '../../lib/config/app-config';
import { PACKAGE_ROOT } from '../../lib/tasks/build';
import exampleConfig from '../../taskworker.config';

export const EXAMPLE_CONFIG_FILE = join(PACKAGE_ROOT, 'taskworker.config.ts');

export interface SynthOptions {
  readonly version?: string;
  readonly config?: TaskworkerConfigInput;
  readonly configFile?: string;
  /** Build the dispatcher artifact (slow); template tests skip it. @defaultValue false */
  readonly bundling?: boolean;
  readonly props?: Partial<Omit<TaskworkerStackProps, 'config' | 'version' | 'tasksDir'>>;
}

export interface Synthesized {
  readonly app: App;
  readonly stack: TaskworkerStack;
  readonly config: TaskworkerConfig;
  readonly template: Template;
  readonly outdir: string;
}

/** The stack of the example app (or a given config) in a fresh App, synthesized into a temp dir. */
export function synthStack(options: SynthOptions = {}): Synthesized {
  const outdir = mkdtempSync(join(tmpdir(), 'tw-cdk-'));
  const app = new App({
    outdir,
    context: options.bundling ? {} : { 'aws:cdk:bundling-stacks': [] },
  });
  const version = options.version ?? 'v1';
  const config = resolveConfig(options.config ?? exampleConfig);
  // A config object stands for the module it came from: the construct gets the file (with a
  // given object, the module's tasks directory), as a user's CDK app would give it.
  const configFile = options.configFile ?? EXAMPLE_CONFIG_FILE;
  const source = options.config
    ? { config: options.config, tasksDir: join(dirname(configFile), options.config.tasksDir ?? exampleConfig.tasksDir ?? 'tasks') }
    : { config: configFile };
  const stack = new TaskworkerStack(app, stackName(config.app, version), { ...source, version, ...options.props });
  return { app, stack, config, template: Template.fromStack(stack), outdir };
}

/** CloudFormation logical id of a construct's resource inside a stack. */
export function logicalId(stack: TaskworkerStack, resource: { node: { defaultChild?: unknown } } | object): string {
  const child = (resource as { node: { defaultChild?: unknown } }).node.defaultChild ?? resource;
  return stack.getLogicalId(child as never);
}

/** Synthesizes the app and returns the directory of the dispatcher function's staged asset. */
export function dispatcherAssetDir(synth: Synthesized): string {
  const assembly = synth.app.synth();
  const artifact = assembly.getStackByName(synth.stack.stackName);
  const functions = Object.values(synth.template.findResources('AWS::Lambda::Function')) as Array<{
    Properties: { Code: { S3Key: string } };
  }>;
  const hash = functions[0]?.Properties.Code.S3Key.replace(/\.zip$/, '');
  const manifest = JSON.parse(readFileSync(join(assembly.directory, `${artifact.stackName}.assets.json`), 'utf8')) as {
    files: Record<string, { source: { path: string; packaging: string } }>;
  };
  const source = hash ? manifest.files[hash]?.source : undefined;
  if (source?.packaging !== 'zip') throw new Error(`no zip asset ${hash} for the dispatcher in ${assembly.directory}`);
  return join(assembly.directory, source.path);
}

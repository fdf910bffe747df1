// esbuild options for this repo's Node entry points (the CLI, benchmarks): CommonJS, packages left
// external (resolved from node_modules at run time; the emulators are optional peers, loaded when
// `taskworker dev` starts them), the package's own entry points taken from the sources.
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

export const nodeEntryOptions = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: 'linked',
  logLevel: 'warning',
  absWorkingDir: root,
  alias: {
    taskworker: './lib/index.ts',
    'taskworker/runtime': './lib/runtime.ts',
    'taskworker/testing': './lib/testing/index.ts',
    'taskworker/cdk': './infra/index.ts',
  },
  packages: 'external',
};

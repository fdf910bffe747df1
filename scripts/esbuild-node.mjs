// esbuild options for this repo's Node entry points (the CLI, benchmarks): CommonJS, packages
// left external (resolved from node_modules at run time) except fauxqs, which ships ESM only
// and so is bundled into the CommonJS output.
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
  alias: { taskworker: './lib/index.ts', 'taskworker/runtime': './lib/tasks/runtime.ts', 'taskworker/testing': './lib/testing/index.ts' },
  plugins: [
    {
      name: 'external-packages-but-fauxqs',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => (args.path === 'fauxqs' ? undefined : { path: args.path, external: true }));
      },
    },
  ],
};

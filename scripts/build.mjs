// Builds the CLI into dist/cli.js. Packages stay external (resolved from node_modules at run
// time) except fauxqs, which ships ESM only and so is bundled into this CommonJS file.
import { build } from 'esbuild';

await build({
  entryPoints: ['cli/taskworker.ts'],
  outfile: 'dist/cli.js',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: 'linked',
  logLevel: 'warning',
  alias: { taskworker: './lib/index.ts' },
  plugins: [
    {
      name: 'external-packages-but-fauxqs',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => {
          if (args.path === 'fauxqs') return undefined;
          return { path: args.path, external: true };
        });
      },
    },
  ],
});

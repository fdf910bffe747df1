// Builds the CLI into dist/cli.js.
import { build } from 'esbuild';
import { nodeEntryOptions } from './esbuild-node.mjs';

await build({ ...nodeEntryOptions, entryPoints: ['cli/taskworker.ts'], outfile: 'dist/cli.js' });

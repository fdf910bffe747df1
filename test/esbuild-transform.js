// Jest transform on esbuild (already a dependency): TypeScript and ESM (fauxqs) to CommonJS.
const { transformSync } = require('esbuild');

module.exports = {
  process(source, filename) {
    const { code, map } = transformSync(source, {
      loader: filename.endsWith('.ts') ? 'ts' : 'js',
      format: 'cjs',
      target: 'node20',
      sourcemap: 'external',
      sourcefile: filename,
    });
    return { code, map };
  },
};

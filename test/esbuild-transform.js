// Jest transform on esbuild (already a dependency): TypeScript and ESM (fauxqs) to CommonJS.
const { transformSync } = require('esbuild');

module.exports = {
  process(source, filename) {
    const { code, map } = transformSync(source, {
      loader: filename.endsWith('.ts') ? 'ts' : 'js',
      format: 'cjs',
      target: 'node20',
      // Jest runs modules through its own CommonJS loader, which cannot follow a dynamic `import()`
      // (Node can): each becomes a require, of the transformed copy where the moduleNameMapper
      // names one (the ESM-only emulator fauxqs).
      supported: { 'dynamic-import': false },
      sourcemap: 'external',
      sourcefile: filename,
    });
    return { code, map };
  },
};

// Jest transform on esbuild (already a dependency): TypeScript and ESM (fauxqs) to CommonJS.
const { transformSync } = require('esbuild');

/**
 * Jest runs modules through its own CommonJS loader, which cannot follow a dynamic `import()`
 * (Node can). The one the library makes, of the ESM-only emulator fauxqs, becomes a require of
 * the transformed copy the moduleNameMapper names.
 */
const dynamicImports = (code, filename) =>
  /[\\/]lib[\\/]local[\\/]emulators\.ts$/.test(filename)
    ? code.replace(/\bimport\((["'])fauxqs\1\)/g, 'Promise.resolve(require("fauxqs"))')
    : code;

module.exports = {
  process(source, filename) {
    const { code, map } = transformSync(dynamicImports(source, filename), {
      loader: filename.endsWith('.ts') ? 'ts' : 'js',
      format: 'cjs',
      target: 'node20',
      sourcemap: 'external',
      sourcefile: filename,
    });
    return { code, map };
  },
};

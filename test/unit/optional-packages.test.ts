/**
 * Optional packages a command needs (lib/tasks/package-root.ts): every missing one is named in one
 * line with one install command, so `taskworker dev` in a project without its emulators says
 * "needs fauxqs and dynalite" once, not "needs fauxqs", then after that install "needs dynalite".
 */
import { MissingDependencyError } from '../../lib/errors';
import { optionalDependencies } from '../../lib/tasks/package-root';

/** What Node throws for a package that is not installed: `require` (CommonJS) or `import()` (ES). */
function notInstalled(name: string, code: 'MODULE_NOT_FOUND' | 'ERR_MODULE_NOT_FOUND' = 'MODULE_NOT_FOUND'): Error {
  return Object.assign(new Error(`Cannot find module '${name}'`), { code });
}

const PURPOSE = 'the local emulators (taskworker dev)';

afterEach(() => {
  jest.resetModules();
  jest.dontMock('fauxqs');
  jest.dontMock('dynalite');
});

describe('optional packages', () => {
  it('name every missing one in one line with one install command, at the versions the package expects', async () => {
    const loading = optionalDependencies(PURPOSE, {
      fauxqs: async () => {
        throw notInstalled('fauxqs', 'ERR_MODULE_NOT_FOUND');
      },
      dynalite: () => {
        throw notInstalled('dynalite');
      },
    });

    await expect(loading).rejects.toThrow(MissingDependencyError);
    await expect(loading).rejects.toThrow(
      /^the local emulators \(taskworker dev\) needs fauxqs and dynalite: npm install --save-dev fauxqs@~1\.9\.2 dynalite@\^4\.0\.0$/,
    );
  });

  it('name only the missing ones, and load the rest', async () => {
    const loading = optionalDependencies(PURPOSE, {
      fauxqs: async () => ({ buildApp: 'fauxqs' }),
      dynalite: () => {
        throw notInstalled('dynalite');
      },
    });

    await expect(loading).rejects.toThrow(`${PURPOSE} needs dynalite: npm install --save-dev dynalite@^4.0.0`);
    await expect(optionalDependencies(PURPOSE, { fauxqs: async () => 'f', dynalite: () => 'd' })).resolves.toEqual({
      fauxqs: 'f',
      dynalite: 'd',
    });
  });

  it('throw a package that is there but fails to load as it is, not as missing', async () => {
    const broken = new SyntaxError('Unexpected token in dynalite/index.js');
    const loading = optionalDependencies(PURPOSE, {
      fauxqs: async () => {
        throw notInstalled('fauxqs');
      },
      dynalite: () => {
        throw broken;
      },
    });

    await expect(loading).rejects.toBe(broken);
  });

  it('make taskworker dev name both emulators at once when neither is installed', async () => {
    jest.doMock('fauxqs', () => {
      throw notInstalled('fauxqs', 'ERR_MODULE_NOT_FOUND');
    });
    jest.doMock('dynalite', () => {
      throw notInstalled('dynalite');
    });
    const { startEmulators } = require('../../lib/local/emulators') as typeof import('../../lib/local/emulators');

    await expect(startEmulators()).rejects.toThrow(
      `${PURPOSE} needs fauxqs and dynalite: npm install --save-dev fauxqs@~1.9.2 dynalite@^4.0.0`,
    );
  });
});

describe('the command, when a package it loads is not installed', () => {
  it('names the package (not a path, not a built-in) so it can say in one line how to install it', async () => {
    const { missingPackage } = await import('../../cli/taskworker');
    expect(missingPackage(notInstalled('@aws-sdk/client-s3'))).toBe('@aws-sdk/client-s3');
    expect(missingPackage(notInstalled('@aws-sdk/client-s3/dist-cjs/index.js'))).toBe('@aws-sdk/client-s3');
    expect(missingPackage(notInstalled('fauxqs/dist/app.js', 'ERR_MODULE_NOT_FOUND'))).toBe('fauxqs');
    expect(missingPackage(notInstalled('./tasks/send-email'))).toBeUndefined();
    expect(missingPackage(notInstalled('/abs/path/tasks.cjs'))).toBeUndefined();
    expect(missingPackage(new Error('Cannot find module thing'))).toBeUndefined();
  });
});

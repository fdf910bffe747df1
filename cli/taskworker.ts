import { TaskworkerError } from '../lib/errors';
import { DEMO_USAGE, demoCommand } from './demo';
import { DEV_USAGE, devCommand } from './dev';
import { PUBLISH_USAGE, publishCommand } from './publish';
import { UsageError } from './shared';

const USAGE = ['usage:', DEV_USAGE, PUBLISH_USAGE, DEMO_USAGE].join('\n\n');

/** Runs one CLI command; returns the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  // Local tooling on Node 20 should not print the SDK's Node-support notice on every run.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'dev':
        await devCommand(rest);
        return 0;
      case 'publish':
        await publishCommand(rest);
        return 0;
      case 'demo':
        return await demoCommand(rest);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`taskworker: ${error.message}\n`);
      return 2;
    }
    if (
      error instanceof TaskworkerError ||
      (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))
    ) {
      process.stderr.write(`taskworker: ${error.name}: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`taskworker: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}

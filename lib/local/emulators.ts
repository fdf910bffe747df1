import type { AddressInfo } from 'node:net';
import type Dynalite from 'dynalite';
import { optionalDependencies } from '../tasks/package-root';

export interface EmulatorOptions {
  /** @defaultValue a free port */
  readonly sqsPort?: number;
  /** @defaultValue a free port */
  readonly dynamodbPort?: number;
  /** @defaultValue '127.0.0.1' */
  readonly host?: string;
}

export interface Emulators {
  readonly sqsEndpoint: string;
  readonly dynamodbEndpoint: string;
  stop(): Promise<void>;
}

/** Starts the SQS emulator (fauxqs) and the DynamoDB emulator (dynalite) in this process. */
export async function startEmulators(options: EmulatorOptions = {}): Promise<Emulators> {
  const host = options.host ?? '127.0.0.1';
  // Optional peers: a service that only publishes does not install the emulators. Both are loaded
  // before either is used, so a project missing both hears of both at once. fauxqs ships ESM only,
  // so it is imported; dynalite is CommonJS.
  const loaded = await optionalDependencies('the local emulators (taskworker dev)', {
    fauxqs: () => import('fauxqs'),
    dynalite: () => (require('dynalite') as { default?: typeof Dynalite }).default ?? (require('dynalite') as typeof Dynalite),
  });
  const { buildApp } = loaded.fauxqs;
  const dynalite = loaded.dynalite;
  // fauxqs's own start helper listens on every interface; build its app and bind loopback only.
  // Queue URLs it hands out read http://sqs.<region>.localhost:<port>/000000000000/<name>.
  const sqs = buildApp({ logger: false, host: 'localhost' });
  const sqsEndpoint = await sqs.listen({ port: options.sqsPort ?? 0, host });
  const dynamo = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  try {
    await new Promise<void>((resolve, reject) => {
      dynamo.once('error', reject);
      dynamo.listen(options.dynamodbPort ?? 0, host, () => resolve());
    });
  } catch (error) {
    await sqs.close();
    throw error;
  }
  const dynamoPort = (dynamo.address() as AddressInfo).port;
  return {
    sqsEndpoint,
    dynamodbEndpoint: `http://${host}:${dynamoPort}`,
    async stop() {
      await sqs.close();
      // Keep-alive connections of clients that were not destroyed would hold close() open.
      dynamo.closeAllConnections();
      await new Promise<void>((resolve) => dynamo.close(() => resolve()));
    },
  };
}

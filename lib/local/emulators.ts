import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';
import { startFauxqs } from 'fauxqs';

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
  const sqs = await startFauxqs({ port: options.sqsPort ?? 0, host, logger: false });
  const dynamo = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  try {
    await new Promise<void>((resolve, reject) => {
      dynamo.once('error', reject);
      dynamo.listen(options.dynamodbPort ?? 0, host, () => resolve());
    });
  } catch (error) {
    await sqs.stop();
    throw error;
  }
  const dynamoPort = (dynamo.address() as AddressInfo).port;
  return {
    sqsEndpoint: `http://${host}:${sqs.port}`,
    dynamodbEndpoint: `http://${host}:${dynamoPort}`,
    async stop() {
      await sqs.stop();
      await new Promise<void>((resolve) => dynamo.close(() => resolve()));
    },
  };
}

import { LambdaClient, UpdateEventSourceMappingCommand } from '@aws-sdk/client-lambda';
import type { DoorbellSwitch } from '../ports';
import type { LambdaClientOption } from './lambda-launcher';

/**
 * {@link DoorbellSwitch} on AWS Lambda: enables or disables the doorbell queues' event-source
 * mappings (UpdateEventSourceMapping, a free control-plane call). A container remembers what it
 * last set, so a steady fleet makes no calls; a container that has not set anything yet always does.
 */
export class LambdaDoorbellSwitch implements DoorbellSwitch {
  private client: LambdaClient | undefined;
  private last: boolean | undefined;

  constructor(
    private readonly mappingIds: readonly string[],
    private readonly option: LambdaClientOption = {},
  ) {}

  async set(on: boolean): Promise<void> {
    if (this.last === on || this.mappingIds.length === 0) return;
    this.client ??= this.option.client ?? new LambdaClient(this.option.clientConfig ?? {});
    const client = this.client;
    await Promise.all(this.mappingIds.map((id) => client.send(new UpdateEventSourceMappingCommand({ UUID: id, Enabled: on }))));
    this.last = on;
  }
}

import { LambdaClient, UpdateEventSourceMappingCommand } from '@aws-sdk/client-lambda';
import type { DoorbellSwitch } from '../ports';
import type { LambdaClientOption } from './lambda-launcher';

/** A doorbell's event-source mapping, and the queue it rings for (unknown in an older `id`-only list). */
export interface DoorbellMapping {
  readonly id: string;
  readonly queue?: string;
}

/**
 * Parses `TASKWORKER_DOORBELL_MAPPINGS`: comma-separated `queue=uuid` (or a bare `uuid`, as
 * stacks deployed before pausing wrote it: such a mapping cannot be told apart by queue).
 */
export function doorbellMappingsFromEnv(value: string | undefined): DoorbellMapping[] {
  return (value ?? '')
    .split(',')
    .filter((entry) => entry !== '')
    .map((entry) => {
      const at = entry.indexOf('=');
      return at === -1 ? { id: entry } : { queue: entry.slice(0, at), id: entry.slice(at + 1) };
    });
}

/**
 * {@link DoorbellSwitch} on AWS Lambda: enables or disables the doorbell queues' event-source
 * mappings (UpdateEventSourceMapping, a free control-plane call). A paused queue's mapping is
 * disabled and never enabled by the switch. A container remembers what it last set per mapping,
 * so a steady fleet makes no calls; a container that has not set anything yet always does.
 */
export class LambdaDoorbellSwitch implements DoorbellSwitch {
  private client: LambdaClient | undefined;
  private readonly last = new Map<string, boolean>();
  private readonly mappings: readonly DoorbellMapping[];

  constructor(
    mappings: ReadonlyArray<string | DoorbellMapping>,
    private readonly option: LambdaClientOption = {},
  ) {
    this.mappings = mappings.map((m) => (typeof m === 'string' ? { id: m } : m));
  }

  async set(on: boolean, off: readonly string[] = []): Promise<void> {
    const wanted = this.mappings
      .map((m) => ({ id: m.id, enabled: on && !(m.queue !== undefined && off.includes(m.queue)) }))
      .filter((m) => this.last.get(m.id) !== m.enabled);
    if (wanted.length === 0) return;
    this.client ??= this.option.client ?? new LambdaClient(this.option.clientConfig ?? {});
    const client = this.client;
    await Promise.all(
      wanted.map(async (m) => {
        await client.send(new UpdateEventSourceMappingCommand({ UUID: m.id, Enabled: m.enabled }));
        this.last.set(m.id, m.enabled);
      }),
    );
  }
}

import { type LambdaClient, ListEventSourceMappingsCommand, UpdateEventSourceMappingCommand } from '@aws-sdk/client-lambda';
import type { DoorbellSwitch } from '../ports';

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
  private readonly last = new Map<string, boolean>();
  private readonly mappings: readonly DoorbellMapping[];

  constructor(
    mappings: ReadonlyArray<string | DoorbellMapping>,
    /** The client, made on first use (lib/aws/lambda-clients.ts). */
    private readonly lambda: () => LambdaClient,
  ) {
    this.mappings = mappings.map((m) => (typeof m === 'string' ? { id: m } : m));
  }

  async set(on: boolean, off: readonly string[] = []): Promise<void> {
    const wanted = this.mappings
      .map((m) => ({ id: m.id, enabled: on && !(m.queue !== undefined && off.includes(m.queue)) }))
      .filter((m) => this.last.get(m.id) !== m.enabled);
    if (wanted.length === 0) return;
    const client = this.lambda();
    await Promise.all(
      wanted.map(async (m) => {
        await client.send(new UpdateEventSourceMappingCommand({ UUID: m.id, Enabled: m.enabled }));
        this.last.set(m.id, m.enabled);
      }),
    );
  }
}

/**
 * An operator's switch of one queue's doorbell trigger (pause, resume): finds the event-source
 * mappings of the queue's doorbell function (ListEventSourceMappings) and enables or disables them
 * (UpdateEventSourceMapping). Needs `lambda:ListEventSourceMappings` and
 * `lambda:UpdateEventSourceMapping` on the operator's credentials.
 */
export class LambdaQueueTriggers {
  constructor(
    /** The doorbell function of a queue by its name (`<app>-<version>-doorbell-<queue>`). */
    private readonly functionOf: (queue: string) => string,
    /** The client, made on first use (lib/aws/lambda-clients.ts). */
    private readonly lambda: () => LambdaClient,
  ) {}

  /** Enables or disables `queue`'s trigger; resolves with how many mappings it switched (0: the queue has no doorbell). */
  async set(queue: string, enabled: boolean): Promise<number> {
    const client = this.lambda();
    const listed = await client
      .send(new ListEventSourceMappingsCommand({ FunctionName: this.functionOf(queue) }))
      .catch((error: unknown) => {
        // No such function: the queue wakes on the schedule, it has no trigger to switch.
        if (error instanceof Error && error.name === 'ResourceNotFoundException') return { EventSourceMappings: [] };
        throw error;
      });
    const ids = (listed.EventSourceMappings ?? []).map((m) => m.UUID).filter((id): id is string => id !== undefined);
    await Promise.all(ids.map((id) => client.send(new UpdateEventSourceMappingCommand({ UUID: id, Enabled: enabled }))));
    return ids.length;
  }
}

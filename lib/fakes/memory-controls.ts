import { type ControlChange, type ControlStore, type Controls, changed, NO_CONTROLS } from '../track/operator-controls';

/** In-memory {@link ControlStore} with the DynamoDB adapter's rules; `reads` and `writes` count its calls. */
export class MemoryControlStore implements ControlStore {
  private controls: Controls = NO_CONTROLS;
  reads = 0;
  writes = 0;

  async read(): Promise<Controls> {
    this.reads += 1;
    return this.controls;
  }

  async change(queue: string, change: ControlChange, now: number): Promise<Controls> {
    const queues = { ...this.controls.queues };
    const next = changed(queues[queue], change, now);
    if (next) queues[queue] = next;
    else delete queues[queue];
    this.controls = { revision: this.controls.revision + 1, queues };
    this.writes += 1;
    return this.controls;
  }
}

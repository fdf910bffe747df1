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
    this.controls = { ...this.controls, revision: this.controls.revision + 1, queues };
    this.writes += 1;
    return this.controls;
  }

  async pause(scope: string, until: number, now: number): Promise<number> {
    this.writes += 1;
    const longer = this.controls.pauses[scope];
    if (longer !== undefined && longer >= until) return longer;
    const pauses = Object.fromEntries(Object.entries(this.controls.pauses).filter(([, end]) => end >= now));
    this.controls = { ...this.controls, pauses: { ...pauses, [scope]: until } };
    return until;
  }
}

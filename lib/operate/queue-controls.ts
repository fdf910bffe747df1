/**
 * Operator controls of a version's queues (pause, resume, priority and SLA at run time): the
 * commands behind `taskworker queues …` and the dashboard's buttons, and how status shows them.
 * The dispatchers read what these write (lib/track/operator-controls.ts).
 */
import type { QueueConfig, TaskworkerConfig } from '../config/app-config';
import { describe } from '../errors';
import { type ControlChange, type ControlStore, type Controls, ControlValueError, type QueueControl } from '../track/operator-controls';

/** Switches a queue's doorbell trigger (on AWS its event-source mapping); resolves with how many it switched. */
export interface QueueTriggers {
  set(queue: string, enabled: boolean): Promise<number>;
}

export interface ControlsContext {
  readonly config: TaskworkerConfig;
  readonly controls: ControlStore;
  readonly now: () => number;
  /** Where the queues have doorbell triggers to switch (AWS); absent locally, where the triggers read the controls themselves. */
  readonly triggers?: QueueTriggers;
}

/** How a queue's controls show beside its config (status, the dashboard). */
export interface QueueControlView {
  /** Epoch ms since when it is paused; absent when it is not. */
  readonly pausedAt?: number;
  /** The priority in force, and the config's. */
  readonly priority: number;
  readonly configuredPriority: number;
  /** The SLA in force (seconds), and the config's. */
  readonly slaSeconds: number;
  readonly configuredSlaSeconds: number;
  /** The fields an operator set over the config. */
  readonly overridden: ReadonlyArray<'priority' | 'slaSeconds'>;
}

export function controlView(queue: QueueConfig, control: QueueControl | undefined): QueueControlView {
  return {
    ...(control?.pausedAt !== undefined ? { pausedAt: control.pausedAt } : {}),
    priority: control?.priority ?? queue.priority,
    configuredPriority: queue.priority,
    slaSeconds: control?.slaSeconds ?? queue.slaSeconds,
    configuredSlaSeconds: queue.slaSeconds,
    overridden: [
      ...(control?.priority !== undefined ? (['priority'] as const) : []),
      ...(control?.slaSeconds !== undefined ? (['slaSeconds'] as const) : []),
    ],
  };
}

export type ControlAction =
  | { readonly kind: 'pause' }
  | { readonly kind: 'resume' }
  | { readonly kind: 'set'; readonly priority?: number; readonly slaSeconds?: number }
  | { readonly kind: 'reset' };

export interface ControlOutcome {
  readonly queue: string;
  readonly revision: number;
  readonly control: QueueControlView;
  /**
   * The doorbell trigger: switched (how many mappings), none to switch, or why it could not be (the
   * dispatchers still hand a paused queue's batches back unrun, and their next scheduled invocation
   * turns its trigger off).
   */
  readonly trigger?: { readonly switched: number } | { readonly error: string };
}

/** The queue named `name`, or a {@link ControlValueError} listing the configured ones. */
export function controlledQueue(config: TaskworkerConfig, name: string): QueueConfig {
  const queue = config.queues.find((q) => q.name === name);
  if (!queue) throw new ControlValueError('queue', name, `one of ${config.queues.map((q) => q.name).join(', ')}`);
  return queue;
}

/** Pauses, resumes, sets or resets one queue's controls; a pause or resume also switches its doorbell trigger where there is one. */
export async function controlQueue(ctx: ControlsContext, name: string, action: ControlAction): Promise<ControlOutcome> {
  const queue = controlledQueue(ctx.config, name);
  let change: ControlChange;
  switch (action.kind) {
    case 'pause':
      change = { paused: true };
      break;
    case 'resume':
      change = { paused: false };
      break;
    case 'set':
      if (action.priority === undefined && action.slaSeconds === undefined)
        throw new ControlValueError('queues set', name, '--priority P and/or --sla S');
      change = {
        ...(action.priority !== undefined ? { priority: action.priority } : {}),
        ...(action.slaSeconds !== undefined ? { slaSeconds: action.slaSeconds } : {}),
      };
      break;
    case 'reset':
      change = { priority: null, slaSeconds: null };
      break;
  }
  const controls = await ctx.controls.change(queue.name, change, ctx.now());
  let trigger: ControlOutcome['trigger'];
  if (ctx.triggers && (action.kind === 'pause' || action.kind === 'resume')) {
    try {
      trigger = { switched: await ctx.triggers.set(queue.name, action.kind === 'resume') };
    } catch (error) {
      trigger = { error: describe(error) };
    }
  }
  return {
    queue: queue.name,
    revision: controls.revision,
    control: controlView(queue, controls.queues[queue.name]),
    ...(trigger ? { trigger } : {}),
  };
}

/** Every queue's view under `controls`, in config order. */
export function controlViews(config: TaskworkerConfig, controls: Controls): Record<string, QueueControlView> {
  return Object.fromEntries(config.queues.map((q) => [q.name, controlView(q, controls.queues[q.name])]));
}

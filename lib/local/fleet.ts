/**
 * A local stack's function containers: the dispatcher processes (and, when on demand, each doorbell
 * function's), the pool that hands them invocations as Lambda would, a dead one's replacement, and
 * what starts invocations: the config's schedules and, when on demand, the local wake-up.
 */
import type { ChildProcess } from 'node:child_process';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { systemClock } from '../clock';
import type { QueueUrls } from '../ports';
import type { Artifact } from '../tasks/build';
import type { TaskBundle } from '../tasks/bundle';
import { type ControlsCache, pausedQueues } from '../track/operator-controls';
import { DOORBELL_MAX_CONCURRENCY, doorbellQueues } from '../wake-up';
import { ContainerPool } from './containers';
import { forkDispatcher, RestartBackoff, stopChild } from './dispatcher-processes';
import { type LocalSchedules, startLocalSchedules } from './recurring-timers';
import type { RunnerMessage } from './runner';
import type { DispatcherProcessOptions, HeldJob, LocalStackOptions } from './stack-options';
import { DISPATCHER_FUNCTION, doorbellFunction, type LocalWakeUp, startLocalWakeUp } from './wake';

export interface LocalFleetOptions {
  readonly options: LocalStackOptions;
  readonly version: string;
  readonly region: string;
  readonly sqs: SQSClient;
  /** The local triggers skip a paused queue, as its disabled event-source mapping does in AWS. */
  readonly controls: ControlsCache;
  /** The build the processes run: the latest one after a reload. */
  readonly build: () => { readonly artifact: Artifact; readonly bundle: TaskBundle };
  /** The version's queues: those of the latest config after a reload. */
  readonly urls: () => QueueUrls;
  /** A dispatcher process's environment for a bundle. */
  readonly env: (bundle: TaskBundle) => Record<string, string>;
}

/** A process as it was started: what a replacement starts with. */
interface Started {
  readonly child: ChildProcess;
  readonly index: number;
  readonly startedAt: number;
  readonly more: DispatcherProcessOptions;
  readonly fn: string;
  /** The jobs it received and has not settled. */
  readonly holding: Map<string, HeldJob>;
}

export class LocalFleet {
  readonly dispatchers: ChildProcess[] = [];
  readonly containers: ContainerPool<ChildProcess>;
  private readonly options: LocalStackOptions;
  private readonly onDemand: boolean;
  /** Containers the pool let go after they idled: their exit is no death. */
  private readonly retired = new WeakSet<ChildProcess>();
  private readonly replace: boolean;
  private stopping = false;
  private died = 0;
  private readonly restarts = new RestartBackoff();
  private readonly pendingRestarts = new Set<NodeJS.Timeout>();
  private wakeUp: LocalWakeUp | undefined;
  private schedules: LocalSchedules | undefined;

  constructor(private readonly from: LocalFleetOptions) {
    const { options } = from;
    this.options = options;
    this.onDemand = options.invocations === 'on-demand';
    const warmCount = (fn: string) => (fn === DISPATCHER_FUNCTION ? (options.dispatchers ?? 1) : 1);
    this.containers = new ContainerPool<ChildProcess>({
      start: (fn) => (this.stopping ? undefined : this.dispatchers[this.startDispatcher({ fn })]),
      // The dispatcher function's reserved concurrency (more when more were asked for up front); a doorbell's trigger.
      concurrency: (fn) =>
        fn === DISPATCHER_FUNCTION
          ? Math.max(warmCount(fn), from.build().bundle.config.dispatcher.maxConcurrency)
          : DOORBELL_MAX_CONCURRENCY,
      warm: warmCount,
      retire: (child) => {
        this.retired.add(child);
        void stopChild(child);
      },
      ...(options.idleContainerMs !== undefined ? { idleMs: options.idleContainerMs } : {}),
    });
    this.replace = options.replaceDeadDispatchers ?? true;
  }

  /** Dispatcher processes running now. */
  alive(): number {
    return this.dispatchers.filter((c) => c.exitCode === null && c.signalCode === null).length;
  }

  /** Dispatcher processes that ended while the stack ran (not stopped by it). */
  deaths(): number {
    return this.died;
  }

  /** Starts one more dispatcher process (`LocalStack.startDispatcher`); returns its index. */
  startDispatcher(more: DispatcherProcessOptions = {}): number {
    const index = this.dispatchers.length;
    const startedAt = Date.now();
    const fn = more.fn ?? DISPATCHER_FUNCTION;
    const { artifact, bundle } = this.from.build();
    const onOutput = this.options.onOutput;
    const child = forkDispatcher(
      artifact.runnerFile as string,
      {
        ...process.env,
        ...this.from.env(bundle),
        ...(this.onDemand
          ? {
              TASKWORKER_LOCAL_INVOKE: 'on-demand',
              AWS_LAMBDA_FUNCTION_NAME: `${bundle.config.app}-${this.from.version}-${fn}`,
            }
          : {}),
        ...more.env,
      },
      onOutput && ((line) => onOutput(line, index)),
    );
    const started: Started = { child, index, startedAt, more, fn, holding: new Map() };
    child.on('message', (message: RunnerMessage) => this.heard(started, message));
    if (this.onDemand) this.containers.add(child, fn);
    child.once('exit', (code, signal) => this.exited(started, code, signal));
    this.dispatchers.push(child);
    this.options.onDispatcherStart?.(index);
    return index;
  }

  /** Starts the functions' containers and, when on demand, what invokes them. */
  startAll(dispatcherCount: number): void {
    const { options } = this;
    const { bundle } = this.from.build();
    for (let i = 0; i < dispatcherCount; i++) this.startDispatcher();
    if (options.schedules !== false) {
      this.schedules = startLocalSchedules({
        config: bundle.config,
        registry: bundle.registry,
        urls: this.from.urls(),
        sqs: this.from.sqs,
        clock: systemClock,
        ...(options.onScheduleTick ? { onFire: options.onScheduleTick } : {}),
        onError: (message) => options.onDispatcherError?.(message, -1),
      });
    }
    if (!this.onDemand) return;
    for (const queue of doorbellQueues(bundle.config)) this.startDispatcher({ fn: doorbellFunction(queue.name) });
    this.wakeUp = startLocalWakeUp({
      config: bundle.config,
      urls: this.from.urls(),
      sqs: this.from.sqs,
      region: this.from.region,
      functions: this.containers,
      ...(options.schedulePeriodMs !== undefined ? { schedulePeriodMs: options.schedulePeriodMs } : {}),
      onError: (message) => options.onDispatcherError?.(message, -1),
      paused: async () => pausedQueues(await this.from.controls.get()),
    });
  }

  /** Stops what invokes the containers, then the containers gracefully; none is replaced or started from then on. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    this.containers.stopping();
    for (const timer of this.pendingRestarts) clearTimeout(timer);
    this.pendingRestarts.clear();
    await Promise.all([this.wakeUp?.stop(), this.schedules?.stop()]);
    this.wakeUp = undefined;
    this.schedules = undefined;
    await Promise.all(this.dispatchers.map((child) => stopChild(child)));
    this.containers.clear();
  }

  /** {@link stopAll}, after which processes may start again (`LocalStack.stopDispatchers`). */
  async stopDispatchers(): Promise<void> {
    await this.stopAll();
    this.stopping = false;
  }

  /** What a process says: the jobs it holds, its reports, its invocations' ends, its doorbells, and invocations it launches. */
  private heard({ child, index, holding }: Started, message: RunnerMessage): void {
    const { options } = this;
    switch (message.type) {
      case 'ready':
        return;
      case 'started':
        for (const job of message.start.jobs) holding.set(job.messageId, { queue: message.start.queue, ...job });
        return;
      case 'batch':
        for (const job of message.report.jobs) holding.delete(job.messageId);
        options.onBatch?.(message.report, index);
        return;
      case 'invocation':
        options.onInvocation?.(message.summary, index);
        return;
      case 'error':
        options.onDispatcherError?.(message.message, index);
        return;
      case 'invoked':
        this.containers.finished(child, {
          ...(message.result !== undefined ? { result: message.result } : {}),
          ...(message.error !== undefined ? { error: message.error } : {}),
        });
        return;
      case 'doorbells':
        this.wakeUp?.setDoorbells(message.on, message.off ?? []);
        return;
      case 'launch':
        for (let i = 0; i < message.count; i++)
          void this.containers.invoke(DISPATCHER_FUNCTION, message.event, this.from.build().bundle.config.dispatcher.timeoutSeconds);
    }
  }

  /** A process ended: a death unless the stack stopped it or the pool let it go; replaced after the backoff when asked. */
  private exited({ child, index, startedAt, more, fn, holding }: Started, code: number | null, signal: NodeJS.Signals | null): void {
    const { options } = this;
    this.containers.exited(child);
    if (this.retired.has(child) && !this.stopping) options.onDispatcherRetired?.(index);
    if (this.stopping || this.retired.has(child)) return;
    this.died += 1;
    const held = [...holding.values()];
    if (!this.replace) {
      options.onDispatcherExit?.({ dispatcher: index, code, signal, held });
      return;
    }
    const afterMs = this.restarts.next(Date.now() - startedAt);
    // Replacements already waiting take the numbers before this one: they start first (unless a
    // dispatcher that lived a minute reset the backoff meanwhile; then only the message is off).
    const replacement = { dispatcher: this.dispatchers.length + this.pendingRestarts.size, afterMs };
    options.onDispatcherExit?.({ dispatcher: index, code, signal, held, replacement });
    const timer = setTimeout(() => {
      this.pendingRestarts.delete(timer);
      this.startDispatcher({ ...more, fn });
    }, afterMs);
    this.pendingRestarts.add(timer);
  }
}

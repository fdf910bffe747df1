import { parseArgs } from 'node:util';
import { lambdaQueueTriggers } from '../lib/aws/lambda-clients';
import { operatorContext } from '../lib/operate/operator-context';
import { type ControlAction, type ControlOutcome, controlQueue, type QueueTriggers } from '../lib/operate/queue-controls';
import { ControlValueError, parsePriority, parseSlaSeconds } from '../lib/track/operator-controls';
import { doorbellQueues } from '../lib/wake-up';
import { operatorTarget } from './operator';
import { UsageError } from './shared';

export const QUEUES_USAGE = `taskworker queues pause NAME [--json]
taskworker queues resume NAME [--json]
taskworker queues set NAME [--priority P] [--sla S] [--json]
taskworker queues reset NAME [--json]
  Operator controls of one release version's queues (--version, or the running taskworker dev's):
  a paused queue is received from by no dispatcher within a few seconds (its doorbell trigger is
  turned off on AWS); publishing to it still works and its messages wait. \`set\` overrides the
  deployed priority (1..100) and SLA (seconds) for every dispatcher until \`reset\`. All take --config FILE.`;

const SUBCOMMANDS = ['pause', 'resume', 'set', 'reset'] as const;

/** Runs `taskworker queues …`. */
export async function queuesCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      version: { type: 'string' },
      config: { type: 'string' },
      json: { type: 'boolean', default: false },
      priority: { type: 'string' },
      sla: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [sub, name, ...extra] = positionals;
  if (!(SUBCOMMANDS as readonly string[]).includes(sub ?? ''))
    throw new UsageError(
      `${sub === undefined ? '' : `unknown queues command ${JSON.stringify(sub)}; `}usage: taskworker queues pause|resume|set|reset NAME`,
    );
  if (name === undefined) throw new UsageError(`queues ${sub}: the queue's NAME is missing`);
  if (extra.length > 0) throw new UsageError(`queues ${sub}: unexpected ${JSON.stringify(extra[0])}`);
  if (sub !== 'set' && (values.priority !== undefined || values.sla !== undefined))
    throw new UsageError(`queues ${sub}: --priority and --sla go with \`queues set\``);
  let action: ControlAction;
  try {
    action =
      sub === 'set'
        ? {
            kind: 'set',
            ...(values.priority !== undefined ? { priority: parsePriority(values.priority) } : {}),
            ...(values.sla !== undefined ? { slaSeconds: parseSlaSeconds(values.sla) } : {}),
          }
        : { kind: sub as 'pause' | 'resume' | 'reset' };
    if (action.kind === 'set' && action.priority === undefined && action.slaSeconds === undefined)
      throw new UsageError('queues set: give --priority P and/or --sla S');
  } catch (error) {
    if (error instanceof ControlValueError) throw new UsageError(error.message);
    throw error;
  }
  const { local, version, config } = await operatorTarget(values);
  if (!config.queues.some((q) => q.name === name))
    throw new UsageError(`queue ${JSON.stringify(name)}: no such queue (configured: ${config.queues.map((q) => q.name).join(', ')})`);
  const ctx = await operatorContext({ config, version });
  if (!ctx.controls) throw new UsageError(`version ${version} has no stats table to keep controls in`);
  // On AWS a doorbell queue's trigger is switched too; locally (taskworker dev, other emulators
  // without Lambda) the triggers read the controls themselves.
  const env = process.env;
  const onLambda = env.AWS_ENDPOINT_URL_LAMBDA !== undefined || !(local || env.AWS_ENDPOINT_URL_SQS || env.AWS_ENDPOINT_URL);
  const doorbells = new Set(doorbellQueues(config).map((q) => q.name));
  const lambda = lambdaQueueTriggers((queue) => `${config.app}-${version}-doorbell-${queue}`);
  const triggers: QueueTriggers = { set: (queue, enabled) => (doorbells.has(queue) ? lambda.set(queue, enabled) : Promise.resolve(0)) };
  const outcome = await controlQueue(
    { config, controls: ctx.controls, now: () => Date.now(), ...(onLambda ? { triggers } : {}) },
    name,
    action,
  );
  process.stdout.write(`${values.json ? JSON.stringify(outcome, null, 2) : describeOutcome(sub as string, outcome)}\n`);
  return 0;
}

function describeOutcome(sub: string, o: ControlOutcome): string {
  const c = o.control;
  const state = c.pausedAt === undefined ? `${o.queue} is not paused` : `${o.queue} is paused since ${new Date(c.pausedAt).toISOString()}`;
  const priority = `priority ${c.priority}${c.overridden.includes('priority') ? ` (set; config ${c.configuredPriority})` : ''}`;
  const sla = `SLA ${c.slaSeconds} s${c.overridden.includes('slaSeconds') ? ` (set; config ${c.configuredSlaSeconds} s)` : ''}`;
  const trigger =
    o.trigger === undefined
      ? ''
      : 'error' in o.trigger
        ? `\ncould not switch its doorbell trigger (${o.trigger.error}): the dispatchers hand its batches back unrun, and the next scheduled one switches it`
        : o.trigger.switched > 0
          ? `\nits doorbell trigger is ${sub === 'pause' ? 'off' : 'on'}`
          : '';
  return `${state} · ${priority} · ${sla} · controls revision ${o.revision}${trigger}`;
}

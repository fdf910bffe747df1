import { parseArgs } from 'node:util';
import { systemClock } from '../lib/clock';
import { listEvents, renderEvents } from '../lib/operate/events';
import { Publisher } from '../lib/publish/publisher';
import { subscriberJobId } from '../lib/wire/event';
import { operatorTarget, viewTarget } from './operator';
import { loadTaskDefinitions } from './publish';
import { jsonOption, jsonOrFileOption, UsageError } from './shared';

export const EMIT_USAGE = `taskworker emit EVENT --payload JSON|@FILE [--id ID] [--app-data JSON] [--version V] [--config FILE] [--json]
  Emits one of the app's declared events: checked by its validate, published once to the version's
  SNS topic, which runs every subscribed task (here and in other apps) once, as job <id>/<task>.
  --payload @FILE reads the payload's JSON from FILE; one over SNS's 256 KiB goes through the
  version's bucket (up to 10 MiB).
  Prints the event id and the job id of each subscriber in this app. Talks to a running
  \`taskworker dev\` in this directory (or AWS_ENDPOINT_URL_SQS/SNS), else to AWS.`;

export const EVENTS_USAGE = `taskworker events [--version V] [--config FILE] [--json]
  The events the app emits and those it receives from other apps, each with its subscriber tasks
  in this app, their queues and what their jobs did today.`;

/** Runs `taskworker emit`. */
export async function emitCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      payload: { type: 'string' },
      id: { type: 'string' },
      'app-data': { type: 'string' },
      version: { type: 'string' },
      config: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const [event, ...extra] = positionals;
  if (!event || extra.length > 0) throw new UsageError(`expected exactly one EVENT\n${EMIT_USAGE}`);
  const payload = jsonOrFileOption('--payload', values.payload, null);
  const appData = jsonOption('--app-data', values['app-data'], undefined);
  const { version, configFile, config } = await operatorTarget(values);
  const publisher = new Publisher({ config, version });
  const emitted = await publisher.emit(event, payload, {
    ...(values.id !== undefined ? { id: values.id } : {}),
    ...(appData !== undefined ? { appData } : {}),
  });
  const subscribers = (await loadTaskDefinitions(configFile))
    .filter((t) => t.on.includes(event))
    .map((t) => ({ task: t.name, queue: t.queue, jobId: subscriberJobId(emitted.eventId, t.name) }));
  if (values.json) process.stdout.write(`${JSON.stringify({ event, version, ...emitted, subscribers })}\n`);
  else {
    process.stdout.write(`emitted ${event} (version ${version}): event ${emitted.eventId}, message ${emitted.messageId}\n`);
    for (const s of subscribers) process.stdout.write(`  ${s.task} on ${s.queue}: job ${s.jobId}\n`);
    if (subscribers.length === 0) process.stdout.write('  no subscriber in this app (other apps subscribe on their own)\n');
  }
  return 0;
}

/** Runs `taskworker events`. */
export async function eventsCommand(argv: string[]): Promise<number> {
  const { json, config, version, configFile, ctx } = await viewTarget('events', argv);
  const view = await listEvents(config, version, await loadTaskDefinitions(configFile), ctx.stats, systemClock.now());
  process.stdout.write(`${json ? JSON.stringify(view, null, 2) : renderEvents(view)}\n`);
  return 0;
}

/**
 * Celery's messages on a queue (lib/wire/celery.ts): what plan() does with a body the envelope
 * decoder could not read as JSON. On a queue that accepts `celery` it is read as Celery's message;
 * on one that does not, a body shaped like one is refused naming the setting to change.
 */
import type { QueueConfig } from '../config/app-config';
import { describe, type SerializedError } from '../errors';
import type { ReceivedMessage } from '../ports';
import type { TaskDefinition, TaskRegistry } from '../tasks/task';
import type { ArchiveReason } from '../wire/archive-reasons';
import { type CeleryLookup, CeleryRejection, celeryJobEnvelope, celeryNames, decodeCelery, looksLikeCelery } from '../wire/celery';
import type { DecodedJob } from '../wire/envelope';
import type { Planned } from './dispatcher-deps';

/** A Celery message read: its job, planned with the envelope its message carries from here on, or why it is refused. */
export type CeleryReading =
  | { readonly kind: 'job'; readonly planned: Planned }
  | {
      readonly kind: 'refused';
      readonly reason: ArchiveReason;
      readonly error: SerializedError & { code: string };
      /** What the message named, for its record (filed under the Celery id); undefined when no id could be read. */
      readonly named: DecodedJob | undefined;
    };

/**
 * Reads a body that is not JSON as a Celery message: undefined when it is none of the queue's
 * business (the queue does not accept Celery and the body does not look like a Celery message).
 * A job's message comes back with its body replaced by the job's envelope, so a retry's copy, a
 * parked job and an archived message are that envelope (as planEvent does for an event).
 */
export function readCelery(registry: TaskRegistry, queue: QueueConfig, message: ReceivedMessage): CeleryReading | undefined {
  const meta = { messageId: message.messageId, sentTimestamp: message.sentTimestamp };
  if (!queue.accept.includes('celery')) {
    if (!looksLikeCelery(message.body)) return undefined;
    const named = celeryNames(message.body);
    return refused(
      new CeleryRejection(
        'malformed',
        'celery-not-accepted',
        `a Celery message${named.task ? ` (task ${JSON.stringify(named.task)})` : ''} on queue ${queue.name}, whose accept is ${JSON.stringify(queue.accept)}: add 'celery' to the queue's accept in the config to run it`,
        named,
      ),
      message,
    );
  }
  try {
    const job = decodeCelery(message.body, meta, celeryLookup(registry));
    // The lookup answers from the registry: the task is registered.
    const def = registry.get(job.task) as TaskDefinition;
    return { kind: 'job', planned: { message: { ...message, body: celeryJobEnvelope(job) }, job, def } };
  } catch (error) {
    // Whatever a message does to the decoder, it is that message's end, never the batch's.
    return refused(
      error instanceof CeleryRejection ? error : new CeleryRejection('malformed', 'celery-not-kombu', describe(error)),
      message,
    );
  }
}

/**
 * A refusal, with what the message named for its record: the names the decoder had read when it
 * refused, else whatever the body carries (a protocol 1 message names its id outside the headers
 * the decoder reads), so a refused message is filed under its Celery id whenever it has one.
 */
function refused(error: CeleryRejection, message: ReceivedMessage): CeleryReading {
  const names = error.id !== undefined ? { id: error.id, task: error.task } : celeryNames(message.body);
  return {
    kind: 'refused',
    reason: error.reason,
    error: { type: error.name, message: error.message, code: error.code },
    named:
      names.id !== undefined
        ? { task: names.task ?? '', id: names.id, payload: null, appData: null, publishedAt: message.sentTimestamp }
        : undefined,
  };
}

const lookups = new WeakMap<TaskRegistry, CeleryLookup>();

/** The registry's tasks by the Celery name each answers to (built once per registry; names are unique, createRegistry checks). */
export function celeryLookup(registry: TaskRegistry): CeleryLookup {
  let lookup = lookups.get(registry);
  if (!lookup) {
    const byName = new Map<string, TaskDefinition>();
    for (const def of registry.values()) if (def.celeryName !== undefined) byName.set(def.celeryName, def);
    lookup = (name) => byName.get(name);
    lookups.set(registry, lookup);
  }
  return lookup;
}

import { ConfigError } from '../errors';
import { EVENT_NAME_PATTERN } from '../wire/event-ref';

/** An event this app emits (config `events`): `publisher.emit(name, payload)` checks its payload with `validate` before anything is sent. */
export interface EventDeclarationInput<P = unknown> {
  /** Lowercase words joined by dots, e.g. `orders.created` (at most 100 characters). */
  readonly name: string;
  /** Checks (and may narrow) the payload at emit; a throw refuses the event with its message. */
  readonly validate?: (payload: unknown) => P;
  /** What the event means, shown by `taskworker events`. */
  readonly description?: string;
}

export interface EventDeclaration {
  readonly name: string;
  readonly validate?: (payload: unknown) => unknown;
  readonly description?: string;
}

/**
 * Events of another app this app's tasks subscribe to (config `subscriptions`): each queue with a
 * subscriber of one of them is subscribed to that app's topic (`<app>-<version>-events`), filtered
 * on the event names its subscribers take.
 */
export interface SubscriptionInput {
  /** The emitting app's name (its config's `app`). */
  readonly app: string;
  /** The emitting app's release version whose topic is subscribed, e.g. `v3`. */
  readonly version: string;
  /** The events of that app this app's tasks take (`on`). */
  readonly events: readonly string[];
  /**
   * The topic's ARN, when it is not `<app>-<version>-events` in this stack's account and region
   * (another account: the emitting app lists this account in its `subscriberAccounts`).
   */
  readonly topicArn?: string;
}

export interface SubscriptionConfig {
  readonly app: string;
  readonly version: string;
  readonly events: readonly string[];
  readonly topicArn?: string;
}

const APP_PATTERN = /^[a-z][a-z0-9-]{0,29}$/;
const VERSION_PATTERN = /^[a-z0-9][a-z0-9-]{0,19}$/;
const TOPIC_ARN_PATTERN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/;

/** The declared events, validated: names match the pattern and appear once. */
export function resolveEvents(input: unknown): EventDeclaration[] {
  if (input === undefined) return [];
  if (!Array.isArray(input)) throw new ConfigError('events', input, 'an array of { name, validate?, description? }');
  const seen = new Set<string>();
  return input.map((raw: unknown, i: number) => {
    const path = `events[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new ConfigError(path, raw, 'an object { name, validate?, description? }');
    const e = raw as Record<string, unknown>;
    const name = eventName(`${path}.name`, e.name);
    if (seen.has(name)) throw new ConfigError(`${path}.name`, name, 'a name no other declared event uses');
    seen.add(name);
    if (e.validate !== undefined && typeof e.validate !== 'function')
      throw new ConfigError(`${path}.validate`, e.validate, 'a function (payload) => payload');
    if (e.description !== undefined && typeof e.description !== 'string')
      throw new ConfigError(`${path}.description`, e.description, 'a string');
    return {
      name,
      ...(e.validate ? { validate: e.validate as (payload: unknown) => unknown } : {}),
      ...(e.description !== undefined ? { description: e.description as string } : {}),
    };
  });
}

/**
 * The subscriptions to other apps' events, validated: each event comes from one place only (this
 * app's own `events`, or one subscription), so a subscriber's `on` always names one topic.
 */
export function resolveSubscriptions(input: unknown, app: string, own: readonly EventDeclaration[]): SubscriptionConfig[] {
  if (input === undefined) return [];
  if (!Array.isArray(input)) throw new ConfigError('subscriptions', input, 'an array of { app, version, events, topicArn? }');
  const from = new Map<string, string>(own.map((e) => [e.name, 'events']));
  return input.map((raw: unknown, i: number) => {
    const path = `subscriptions[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new ConfigError(path, raw, 'an object { app, version, events, topicArn? }');
    const s = raw as Record<string, unknown>;
    if (typeof s.app !== 'string' || !APP_PATTERN.test(s.app))
      throw new ConfigError(`${path}.app`, s.app, 'an app name (lowercase letters, digits and "-", ≤ 30 chars)');
    if (s.app === app) throw new ConfigError(`${path}.app`, s.app, `another app (this app's own events are declared in events)`);
    if (typeof s.version !== 'string' || !VERSION_PATTERN.test(s.version))
      throw new ConfigError(`${path}.version`, s.version, 'a release version such as "v3"');
    if (!Array.isArray(s.events) || s.events.length === 0)
      throw new ConfigError(`${path}.events`, s.events, 'a non-empty array of event names');
    const events = s.events.map((name: unknown, j: number) => {
      const at = `${path}.events[${j}]`;
      const checked = eventName(at, name);
      const earlier = from.get(checked);
      if (earlier) throw new ConfigError(at, checked, `an event not also received from ${earlier} (an event comes from one app)`);
      from.set(checked, path);
      return checked;
    });
    if (s.topicArn !== undefined && (typeof s.topicArn !== 'string' || !TOPIC_ARN_PATTERN.test(s.topicArn))) {
      throw new ConfigError(`${path}.topicArn`, s.topicArn, 'an SNS topic ARN');
    }
    return { app: s.app, version: s.version, events, ...(s.topicArn !== undefined ? { topicArn: s.topicArn as string } : {}) };
  });
}

function eventName(field: string, value: unknown): string {
  if (typeof value !== 'string' || !EVENT_NAME_PATTERN.test(value)) {
    throw new ConfigError(field, value, 'an event name: lowercase words joined by dots, e.g. "orders.created" (≤ 100 chars)');
  }
  return value;
}

const ACCOUNT_PATTERN = /^\d{12}$/;

/**
 * The accounts whose apps may subscribe to this app's events (config `subscriberAccounts`),
 * validated: 12-digit account ids, each once, and only for an app that declares events (there is no
 * topic otherwise).
 */
export function resolveSubscriberAccounts(input: unknown, own: readonly EventDeclaration[]): string[] {
  if (input === undefined) return [];
  if (!Array.isArray(input)) throw new ConfigError('subscriberAccounts', input, 'an array of 12-digit AWS account ids');
  if (input.length > 0 && own.length === 0)
    throw new ConfigError(
      'subscriberAccounts',
      input,
      'an app that declares events (config events): without events there is no topic to share',
    );
  const seen = new Set<string>();
  return input.map((raw: unknown, i: number) => {
    const field = `subscriberAccounts[${i}]`;
    if (typeof raw !== 'string' || !ACCOUNT_PATTERN.test(raw)) throw new ConfigError(field, raw, 'a 12-digit AWS account id, as a string');
    if (seen.has(raw)) throw new ConfigError(field, raw, 'an account not already listed');
    seen.add(raw);
    return raw;
  });
}

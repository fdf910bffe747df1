/** The event a subscriber's job runs for: no imports, so the dashboard's page can read job records that carry one. */

/** What a subscriber's task sees of the event it runs for (`ctx.event`). */
export interface EventRef {
  readonly id: string;
  readonly name: string;
  /** The emitting app, when the event named it. */
  readonly source?: string;
  /** Epoch ms it was emitted. */
  readonly emittedAt: number;
}

/**
 * Event names: lowercase words joined by dots (`orders.created`), each word letters, digits, `_`
 * or `-`; at most 100 characters. They are what a subscription's filter policy matches.
 */
export const EVENT_NAME_PATTERN = /^(?=.{1,100}$)[a-z][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$/;

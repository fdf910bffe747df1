import { type AttributeValue, ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';

/** A conditional write's condition did not hold (by class, or by name from another copy of the SDK). */
export const isConditionFailure = (error: unknown): error is ConditionalCheckFailedException =>
  error instanceof ConditionalCheckFailedException || (error instanceof Error && error.name === 'ConditionalCheckFailedException');

/** JSON-like values to DynamoDB attribute values (strings, numbers, booleans, null, lists, maps). */
export function toAttribute(value: unknown): AttributeValue {
  if (value === null || value === undefined) return { NULL: true };
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`cannot store ${value} in DynamoDB`);
    return { N: String(value) };
  }
  if (typeof value === 'boolean') return { BOOL: value };
  if (Array.isArray(value)) return { L: value.map(toAttribute) };
  if (typeof value === 'object') return { M: toItem(value as Record<string, unknown>) };
  throw new TypeError(`cannot store a ${typeof value} in DynamoDB`);
}

/** An object to an item, leaving out undefined fields. */
export function toItem(value: Record<string, unknown>): Record<string, AttributeValue> {
  const item: Record<string, AttributeValue> = {};
  for (const [key, v] of Object.entries(value)) if (v !== undefined) item[key] = toAttribute(v);
  return item;
}

export function fromAttribute(value: AttributeValue): unknown {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return Number(value.N);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL) return null;
  if (value.L) return value.L.map(fromAttribute);
  if (value.M) return fromItem(value.M);
  // Sets come back as arrays (their order is the service's).
  if (value.SS) return [...value.SS];
  if (value.NS) return value.NS.map(Number);
  throw new TypeError(`unsupported attribute ${JSON.stringify(Object.keys(value))}`);
}

export function fromItem(item: Record<string, AttributeValue>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(item)) out[key] = fromAttribute(v);
  return out;
}

/**
 * The `n`-th placeholder's letters: a…z, ba…bz, … (DynamoDB allows letters, digits and `_` after
 * the `#` or `:`); short, since the emulator parses every character of every expression.
 */
function letters(n: number): string {
  let out = '';
  let rest = n;
  do {
    out = String.fromCharCode(97 + (rest % 26)) + out;
    rest = Math.floor(rest / 26);
  } while (rest > 0);
  return out;
}

/**
 * Builds expression placeholders: `name('state')` → `#a`, `value(x)` → `:a`. Every name goes
 * through a placeholder, so DynamoDB's reserved words never bite; an attribute named twice, and a
 * string, number or boolean given twice, share one placeholder. `slot('now')` reserves a value
 * filled in at each use of a {@link Template} built from the expression.
 */
export class Expression {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, AttributeValue> = {};
  private readonly byName = new Map<string, string>();
  private readonly byValue = new Map<string, string>();
  private readonly slots = new Map<string, string>();
  private counter = 0;

  name(attribute: string): string {
    let placeholder = this.byName.get(attribute);
    if (placeholder === undefined) {
      placeholder = `#${letters(this.byName.size)}`;
      this.byName.set(attribute, placeholder);
      this.names[placeholder] = attribute;
    }
    return placeholder;
  }

  value(v: unknown): string {
    const key = typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? `${typeof v} ${v}` : undefined;
    const known = key === undefined ? undefined : this.byValue.get(key);
    if (known !== undefined) return known;
    const placeholder = this.next();
    this.values[placeholder] = toAttribute(v);
    if (key !== undefined) this.byValue.set(key, placeholder);
    return placeholder;
  }

  /** A value given at each use of the expression's {@link Template}: the same slot name, the same placeholder. */
  slot(name: string): string {
    let placeholder = this.slots.get(name);
    if (placeholder === undefined) {
      placeholder = this.next();
      this.slots.set(name, placeholder);
    }
    return placeholder;
  }

  /** A string set (for `ADD` and `contains`); DynamoDB has no empty sets, so at least one member. */
  stringSet(members: readonly string[]): string {
    const placeholder = this.next();
    this.values[placeholder] = { SS: [...members] };
    return placeholder;
  }

  /** A number set, as {@link stringSet}. */
  numberSet(members: readonly number[]): string {
    const placeholder = this.next();
    this.values[placeholder] = { NS: members.map(String) };
    return placeholder;
  }

  /** The request fields; values are left out when there are none (DynamoDB rejects an empty map). */
  params(): { ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues?: Record<string, AttributeValue> } {
    return Object.keys(this.values).length > 0
      ? { ExpressionAttributeNames: this.names, ExpressionAttributeValues: this.values }
      : { ExpressionAttributeNames: this.names };
  }

  /** The expression's names, constant values and slots, to be used many times with other slot values. */
  template<S extends string>(): Template<S> {
    return new Template<S>(this.names, this.values, [...this.slots] as Array<[S, string]>);
  }

  private next(): string {
    return `:${letters(this.counter++)}`;
  }
}

/**
 * An expression built once (its text kept by its maker) and used for many requests: its names and
 * constant values are shared; each use gives the values of its slots.
 */
export class Template<S extends string> {
  constructor(
    private readonly names: Readonly<Record<string, string>>,
    private readonly constants: Readonly<Record<string, AttributeValue>>,
    private readonly slots: ReadonlyArray<readonly [S, string]>,
  ) {}

  /** The request fields with `values` in the slots (every slot needs one). */
  params(values: Readonly<Record<S, unknown>>): {
    ExpressionAttributeNames: Record<string, string>;
    ExpressionAttributeValues: Record<string, AttributeValue>;
  } {
    const filled: Record<string, AttributeValue> = { ...this.constants };
    for (const [slot, placeholder] of this.slots) filled[placeholder] = toAttribute(values[slot]);
    return { ExpressionAttributeNames: this.names as Record<string, string>, ExpressionAttributeValues: filled };
  }
}

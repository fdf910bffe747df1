import type { AttributeValue } from '@aws-sdk/client-dynamodb';

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
 * Builds expression placeholders: `name('state')` → `#state`, `value(x)` → `:v3`. Every name goes
 * through a placeholder, so DynamoDB's reserved words never bite.
 */
export class Expression {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, AttributeValue> = {};
  private counter = 0;

  name(attribute: string): string {
    const placeholder = `#${attribute.replace(/[^A-Za-z0-9_]/g, '_')}`;
    this.names[placeholder] = attribute;
    return placeholder;
  }

  value(v: unknown): string {
    const placeholder = `:v${this.counter++}`;
    this.values[placeholder] = toAttribute(v);
    return placeholder;
  }

  /** A string set (for `ADD` and `contains`); DynamoDB has no empty sets, so at least one member. */
  stringSet(members: readonly string[]): string {
    const placeholder = `:v${this.counter++}`;
    this.values[placeholder] = { SS: [...members] };
    return placeholder;
  }

  /** A number set, as {@link stringSet}. */
  numberSet(members: readonly number[]): string {
    const placeholder = `:v${this.counter++}`;
    this.values[placeholder] = { NS: members.map(String) };
    return placeholder;
  }

  /** The request fields; values are left out when there are none (DynamoDB rejects an empty map). */
  params(): { ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues?: Record<string, AttributeValue> } {
    return Object.keys(this.values).length > 0
      ? { ExpressionAttributeNames: this.names, ExpressionAttributeValues: this.values }
      : { ExpressionAttributeNames: this.names };
  }
}

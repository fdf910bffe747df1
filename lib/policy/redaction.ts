/**
 * A payload with its task's `redact` fields masked: what the jobs table keeps and every view shows.
 * Pure: the original is never changed (the run gets it whole).
 */

/** What a redacted value reads as. */
export const REDACTED = '[redacted]';

/**
 * `value` with each dotted path's value replaced by {@link REDACTED}: a segment names an object's
 * key; an array on the way applies the rest of the path to each element. A path that leads nowhere
 * changes nothing.
 */
export function redact(value: unknown, paths: readonly string[] | undefined): unknown {
  if (!paths || paths.length === 0) return value;
  return paths.reduce((v, path) => maskAt(v, path.split('.')), value);
}

function maskAt(value: unknown, path: readonly string[]): unknown {
  if (Array.isArray(value)) return value.map((item) => maskAt(item, path));
  if (typeof value !== 'object' || value === null) return value;
  const [head, ...rest] = path as [string, ...string[]];
  if (!Object.hasOwn(value, head)) return value;
  const inner = (value as Record<string, unknown>)[head];
  return { ...value, [head]: rest.length === 0 ? REDACTED : maskAt(inner, rest) };
}

/**
 * The payload as the jobs table keeps it: JSON text with `paths` masked, when at most `maxBytes`
 * long (UTF-8); undefined when longer, or when `maxBytes` is 0.
 */
export function keptPayload(payload: unknown, paths: readonly string[] | undefined, maxBytes: number): string | undefined {
  if (maxBytes <= 0) return undefined;
  const text = JSON.stringify(redact(payload, paths) ?? null);
  return Buffer.byteLength(text) <= maxBytes ? text : undefined;
}

/** The value at a dotted path of a payload (`order.id`), undefined where the path does not reach (own properties only). */
export function payloadAt(payload: unknown, path: string): unknown {
  let at: unknown = payload;
  for (const part of path.split('.')) {
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, part)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

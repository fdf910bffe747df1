/**
 * Claim checks, both ways: a value too large for its message or record is put in the version's
 * bucket as UTF-8 JSON, and a {@link PayloadRef} carries its bucket, key, size and SHA-256; reading
 * it back checks all three before the JSON is parsed. Payloads (publisher → dispatcher) and results
 * (dispatcher → `publisher.result`, `jobs wait`, the dashboard, a dependent's task) share it.
 */
import { createHash } from 'node:crypto';
import { ClaimCheckError } from './errors';
import type { PayloadStore } from './ports';
import { jsonDepth, MAX_JSON_DEPTH } from './wire/envelope';
import type { PayloadRef } from './wire/payload-ref';

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The reference `text` (JSON) gets at the key `keyFor(sha256)` gives in `bucket`: its size and SHA-256, nothing put yet. */
export function claimCheckRef(bucket: string, keyFor: (sha256: string) => string, text: string): PayloadRef & { sha256: string } {
  const sha256 = sha256Hex(text);
  return { bucket, key: keyFor(sha256), bytes: Buffer.byteLength(text, 'utf8'), sha256 };
}

/** Puts `text` where `ref` says (see {@link claimCheckRef}). */
export function putClaimCheck(store: PayloadStore, ref: PayloadRef & { sha256: string }, text: string): Promise<void> {
  return store.put(ref.bucket, ref.key, text, ref.sha256);
}

/** Why the object's text is not the one `ref` names (another size or SHA-256), or undefined. */
export function contentProblem(text: string, ref: PayloadRef): string | undefined {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes !== ref.bytes) return `is ${bytes} bytes; its reference says ${ref.bytes}`;
  if (ref.sha256 !== undefined && sha256Hex(text) !== ref.sha256) return "does not have its reference's sha256";
  return undefined;
}

/**
 * The JSON value `ref` names. Throws `PayloadMissingError` (no such object), {@link ClaimCheckError}
 * (another size or SHA-256, not JSON, nested deeper than the envelope allows), or the store's own
 * error (throttled, unreachable, denied).
 */
export async function readClaimCheck(store: PayloadStore, ref: PayloadRef): Promise<unknown> {
  const text = await store.get(ref.bucket, ref.key);
  const problem = contentProblem(text, ref);
  if (problem) throw new ClaimCheckError(ref.bucket, ref.key, problem);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ClaimCheckError(ref.bucket, ref.key, `is not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (jsonDepth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH)
    throw new ClaimCheckError(ref.bucket, ref.key, `nests deeper than ${MAX_JSON_DEPTH} levels`);
  return value;
}

/**
 * A claim check: where a payload too large for an SQS message is kept instead (an S3 object), as an
 * envelope's `payloadRef` carries it. It imports only S3's naming rule, so the publisher, the
 * dispatcher, the schema test and other SDKs' docs read one definition.
 */
import { BUCKET_NAME_PATTERN } from '../layout/s3-limits';

export interface PayloadRef {
  /** The S3 bucket: the version's own (see lib/layout/payloads.ts); any other is refused. */
  readonly bucket: string;
  /** The object key, under the version's prefix (`payloads/`). */
  readonly key: string;
  /** The object's size in bytes: the payload's UTF-8 JSON, at most {@link MAX_PAYLOAD_REF_BYTES}. */
  readonly bytes: number;
  /** The object's SHA-256, lowercase hex: checked when given, so a changed object is refused rather than run. */
  readonly sha256?: string;
}

/** The largest payload a claim check carries: 10 MiB. */
export const MAX_PAYLOAD_REF_BYTES = 10 * 1024 * 1024;
/** Object keys: 1..1024 printable ASCII characters (the publisher's keys URI-encode the job id). */
export const OBJECT_KEY_PATTERN = /^[\x20-\x7e]{1,1024}$/;
export const SHA256_PATTERN = /^[0-9a-f]{64}$/;

/** What is wrong with a `payloadRef` value, or undefined. */
export function payloadRefProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'is not an object {"bucket", "key", "bytes"[, "sha256"]}';
  const f = value as Record<string, unknown>;
  if (typeof f.bucket !== 'string' || !BUCKET_NAME_PATTERN.test(f.bucket)) return 'has no valid bucket (an S3 bucket name)';
  if (typeof f.key !== 'string' || !OBJECT_KEY_PATTERN.test(f.key)) return 'has no valid key (1..1024 printable ASCII characters)';
  if (typeof f.bytes !== 'number' || !Number.isInteger(f.bytes) || f.bytes < 0 || f.bytes > MAX_PAYLOAD_REF_BYTES)
    return `has no valid bytes (an integer 0..${MAX_PAYLOAD_REF_BYTES})`;
  if (f.sha256 !== undefined && (typeof f.sha256 !== 'string' || !SHA256_PATTERN.test(f.sha256)))
    return 'has an invalid sha256 (64 lowercase hex digits)';
  return undefined;
}

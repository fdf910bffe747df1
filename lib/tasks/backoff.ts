import { MAX_VISIBILITY_SECONDS } from '../layout/sqs-limits';
import type { Random } from '../random';

/** Exponential backoff with full jitter, in seconds. */
export interface BackoffPolicy {
  /** Delay ceiling of the first retry, seconds. @defaultValue 2 */
  readonly baseSeconds: number;
  /** Largest delay ever used, seconds (≤ 43200, SQS's visibility maximum). @defaultValue 300 */
  readonly capSeconds: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseSeconds: 2, capSeconds: 300 };

/**
 * Delay before retry number `failedAttempts` (1 after the first failure): uniform in
 * [0, min(cap, base × 2^(failedAttempts−1))], rounded to whole seconds as SQS takes them.
 */
export function retryDelaySeconds(failedAttempts: number, policy: BackoffPolicy, random: Random): number {
  const exponent = Math.min(Math.max(failedAttempts - 1, 0), 30);
  const ceiling = Math.min(policy.capSeconds, policy.baseSeconds * 2 ** exponent, MAX_VISIBILITY_SECONDS);
  return Math.round(random() * ceiling);
}

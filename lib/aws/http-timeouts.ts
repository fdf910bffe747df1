/**
 * Time limits on the SDK's HTTP requests. The SDK sets none by default, so a connection that
 * stalls (a half-open socket, a load balancer that drops the answer) would hold a dispatcher until
 * its Lambda timeout, with its batch's messages still invisible. With limits, the request fails
 * with a TimeoutError, which the SDK retries like any other transient error.
 */
export interface HttpTimeouts {
  /** Milliseconds to establish the connection. */
  readonly connectionTimeout: number;
  /** Milliseconds for the whole request and response. */
  readonly requestTimeout: number;
}

/** SQS: a receive may long-poll for 20 s, so the request limit leaves room beyond it. */
export const SQS_TIMEOUTS: HttpTimeouts = { connectionTimeout: 3000, requestTimeout: 30_000 };

/** DynamoDB: single-item writes and reads answer in milliseconds; an operator's scan page in well under this. */
export const DYNAMO_TIMEOUTS: HttpTimeouts = { connectionTimeout: 3000, requestTimeout: 10_000 };

/** SNS publishes answer in milliseconds; the limit only stops a stalled connection. */
export const SNS_TIMEOUTS: HttpTimeouts = { connectionTimeout: 3000, requestTimeout: 10_000 };

/** S3: a 10 MiB object moves in well under this; the limit only stops a stalled connection. */
export const S3_TIMEOUTS: HttpTimeouts = { connectionTimeout: 3000, requestTimeout: 60_000 };

/** `config` with `timeouts` on its request handler, unless it brings its own handler. */
export function withHttpTimeouts<T extends { readonly requestHandler?: unknown }>(config: T, timeouts: HttpTimeouts): T {
  if (config.requestHandler !== undefined) return config;
  return { ...config, requestHandler: { ...timeouts, throwOnRequestTimeout: true } };
}

/**
 * The logger taskworker's AWS SDK clients get unless their config names one. The SDK's default
 * logger discards everything, yet its logger middleware builds a redacted copy of every request's
 * input and response for `logger.info` before the call: walked member by member against the
 * operation's schema, about 5 % of a dispatcher's CPU on the jobs table's writes (bench:e2e's
 * profile). The call is `logger?.info?.(…)`, so a logger with no `info` skips building it; this one
 * discards the rest as the default does.
 */
export const SDK_LOGGER = {
  trace(): void {},
  debug(): void {},
  warn(): void {},
} as unknown as {
  debug(...content: unknown[]): void;
  info(...content: unknown[]): void;
  warn(...content: unknown[]): void;
  error(...content: unknown[]): void;
};

/** `config` with {@link SDK_LOGGER}, unless it brings its own logger. */
export function withSdkLogger<T extends object>(config: T): T {
  return (config as { readonly logger?: unknown }).logger !== undefined ? config : { ...config, logger: SDK_LOGGER };
}

/** Spans of time as task options and schedules take them: seconds, or a number with a unit. */

/** A span of time: seconds, or a number with a unit (`'90s'`, `'10m'`, `'2h'`, `'1d'`). */
export type Duration = number | `${number}${'s' | 'm' | 'h' | 'd'}`;

const UNIT_SECONDS = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;

/** A {@link Duration} in seconds; NaN when it is none. */
export function durationSeconds(given: unknown): number {
  const match = typeof given === 'string' ? /^(\d+(?:\.\d+)?)(s|m|h|d)$/.exec(given) : null;
  return typeof given === 'number' ? given : match ? Number(match[1]) * UNIT_SECONDS[match[2] as keyof typeof UNIT_SECONDS] : Number.NaN;
}

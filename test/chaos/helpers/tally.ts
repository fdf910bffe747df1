import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** What one chaos suite counted; `npm run test:chaos` sums these into its summary line. */
export interface Tally {
  readonly suite: string;
  readonly published: number;
  readonly succeeded: number;
  readonly archived: number;
  readonly lost: number;
  /** Jobs whose outcome stood twice, or whose guarded side effect landed more than once. */
  readonly duplicates: number;
  /** Anything else worth reporting (kills by phase, retries, deliveries skipped by the claim). */
  readonly details?: Readonly<Record<string, unknown>>;
  /** File name, when one suite writes more than one tally. @defaultValue the suite's name */
  readonly file?: string;
}

/** Writes a suite's tally where the chaos runner collects them (nothing when run on its own). */
export function writeTally(tally: Tally): void {
  const dir = process.env.TASKWORKER_CHAOS_DIR;
  if (!dir) return;
  writeFileSync(join(dir, `${tally.file ?? tally.suite}.json`), `${JSON.stringify(tally, null, 2)}\n`);
}

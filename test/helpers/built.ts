/**
 * The repository's build (scripts/build.mjs: dist/, the command, the dispatcher artifact and both
 * packages' files), made once per test run for the suites that run the built command or pack the
 * packages. Two suites building at once wrote dist/ under each other's feet (and `npm pack`'s
 * prepack, which also builds, swapped package.json for its packed form while another build read
 * it), so the build runs under a lock in the run's temporary directory: the first suite builds, the
 * others wait for its stamp.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..', '..');
/** A build on a busy 2-core machine takes about 95 s; a lock held past this is a builder that died. */
const WAIT_MS = 10 * 60_000;

export async function ensureBuilt(): Promise<void> {
  const dir = join(process.env.TASKWORKER_TEST_TMPDIR ?? tmpdir(), 'repository-build');
  const stamp = join(dir, 'outcome');
  try {
    mkdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return waitFor(stamp);
  }
  try {
    await promisify(execFile)(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
    writeFileSync(stamp, 'built');
  } catch (error) {
    writeFileSync(stamp, `the build failed: ${(error as Error).message}`);
    throw error;
  }
}

async function waitFor(stamp: string): Promise<void> {
  const until = Date.now() + WAIT_MS;
  while (!existsSync(stamp)) {
    if (Date.now() > until)
      throw new Error(`no build within ${WAIT_MS / 60_000} minutes: another suite's build never said how it ended (${stamp})`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const outcome = readFileSync(stamp, 'utf8');
  if (outcome !== 'built') throw new Error(outcome);
}

import { parseArgs } from 'node:util';
import { operatorContext } from '../lib/operate/operator-context';
import { silentLogger } from '../lib/ports';
import { completeStepToken, type TokenResult } from '../lib/settle/step-tokens';
import { operatorTarget } from './operator';
import { jsonOption, UsageError } from './shared';

export const TOKENS_USAGE = `taskworker tokens complete TOKEN [--value JSON] [--version V] [--config FILE] [--json]
  Completes a token a job waits for (ctx.step.waitForToken): the job resumes at once, the wait
  returning the value (JSON, at most 1 KB; none: null). A token completed before is refused naming
  that completion; so is one whose wait timed out or whose job was cancelled. Exit 0 completed,
  1 refused.`;

/** Runs `taskworker tokens`. */
export async function tokensCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      value: { type: 'string' },
      version: { type: 'string' },
      config: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const [sub, token, ...extra] = positionals;
  if (sub !== 'complete' || !token || extra.length > 0) throw new UsageError(`expected: tokens complete TOKEN\n${TOKENS_USAGE}`);
  const value = jsonOption('--value', values.value, undefined);
  const target = await operatorTarget(values);
  const ctx = await operatorContext({ config: target.config, version: target.version });
  const result = await completeStepToken(
    { jobs: ctx.jobs, queues: ctx.queues, urls: ctx.urls, clock: ctx.clock, logger: silentLogger },
    token,
    value,
  );
  process.stdout.write(`${values.json ? JSON.stringify({ token, ...result }) : tokenLine(token, result)}\n`);
  return result.outcome === 'completed' ? 0 : 1;
}

/** One line per answer: what happened to the token, and to its job. */
export function tokenLine(token: string, result: TokenResult): string {
  switch (result.outcome) {
    case 'completed':
      return `completed ${token}: job ${result.jobId} ${result.sent ? 'resumes now' : 'resumes with the next sweep (its send failed)'}`;
    case 'completed-already':
      return `refused: ${token} was completed at ${new Date(result.completedAt).toISOString()}${result.value !== undefined ? ` with ${result.value}` : ''} (job ${result.jobId}); the first completion stands`;
    case 'not-waiting':
      return `refused: job ${result.jobId} no longer waits for ${token} (it is ${result.state}: the wait timed out, or the job was cancelled)`;
    case 'unknown':
      return `refused: no job waits for ${token}`;
  }
}

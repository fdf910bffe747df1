/**
 * cfn-lint (AWS's CloudFormation linter, a Python tool on this project's machines and CI's) on the
 * synthesized templates: it exits 0. The two findings that do not apply are skipped in the
 * resources' Metadata with their reasons (infra/cfn-lint.ts), and this test checks they say why.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { synthStack } from '../helpers/infra';
import { describeWithTools } from '../helpers/tools';

function lint(template: unknown, outdir: string) {
  const file = join(outdir, 'template.json');
  writeFileSync(file, JSON.stringify(template, null, 1));
  return spawnSync('cfn-lint', ['--format', 'parseable', file], { encoding: 'utf8', timeout: 120_000 });
}

describeWithTools('cfn-lint', 'cfn-lint')('cfn-lint on the synthesized templates', () => {
  it.each([
    ['the example app (doorbell queues, schedules, the dashboard)', {}],
    [
      'a version whose queues all wake on the schedule',
      { config: { app: 'quiet', queues: [{ name: 'bulk', priority: 1, wakeUp: 'schedule' as const }] } },
    ],
  ])('exits 0 on %s', (_name, options) => {
    const synth = synthStack(options);
    const result = lint(synth.template.toJSON(), synth.outdir);
    expect(result.stdout.trim()).toBe('');
    expect(result.status).toBe(0);
  });

  it('skips only the two checks that do not apply, each with its reason beside it', () => {
    const resources = synthStack().template.toJSON().Resources as Record<string, { Type: string; Metadata?: Record<string, unknown> }>;
    const skipped = Object.values(resources).flatMap(({ Type: type, Metadata: metadata = {} }) => {
      const lint = metadata['cfn-lint'] as { config: { ignore_checks: string[] } } | undefined;
      if (!lint) return [];
      return [
        { type, checks: lint.config.ignore_checks, reasons: Object.keys((metadata['cfn-lint-reasons'] ?? {}) as Record<string, string>) },
      ];
    });
    expect(new Set(skipped.map((s) => `${s.type} ${s.checks.join(',')}`))).toEqual(
      new Set(['AWS::CloudWatch::Dashboard E3002', 'AWS::Lambda::Function W3005']),
    );
    for (const s of skipped) expect(s.reasons).toEqual(s.checks);
  });
});

/**
 * Tools some suites need beyond `npm ci`, none of them npm packages: Chromium (the dashboard in a
 * browser), Debian's Celery (interop with the real Celery), boto3 (Python publishers as docs/publishing.md
 * shows them) and cfn-lint (AWS's linter on the synthesized templates). Where one is missing, the tests that
 * need it are skipped and the suite says so in one line, naming the install; under `.ci/run`
 * (`TASKWORKER_REQUIRE_TOOLS=1`) a missing tool fails instead, so CI never passes by skipping.
 * README's "Optional tools" lists the same four, with these install hints.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Debian's Celery and kombu (5.2), run under the machine's python3 with Debian's packages appended to its path. */
export const DEBIAN_PYTHON_PACKAGES = '/usr/lib/python3/dist-packages';

interface Tool {
  /** What it is for, and how to get it. */
  readonly install: string;
  readonly present: () => boolean;
}

const succeeds = (command: string, args: readonly string[]) => spawnSync(command, args, { stdio: 'ignore', timeout: 60_000 }).status === 0;

export const TOOLS = {
  chromium: {
    install: `no Chromium at ${CHROMIUM}: sudo apt-get install -y chromium (npm test installs it where it may), or set CHROMIUM_PATH`,
    present: () => existsSync(CHROMIUM),
  },
  celery: {
    install: `no Celery in ${DEBIAN_PYTHON_PACKAGES}: sudo apt-get install -y python3-celery python3-kombu python3-pycurl`,
    present: () => existsSync(`${DEBIAN_PYTHON_PACKAGES}/celery`) && existsSync(`${DEBIAN_PYTHON_PACKAGES}/kombu`),
  },
  boto3: {
    // SQS's JSON protocol (boto3 1.34 and later; Debian's 1.26 speaks the query protocol, which the emulator does not).
    install: 'python3 has no boto3 that speaks SQS’s JSON protocol: python3 -m pip install boto3',
    present: () =>
      succeeds('python3', [
        '-c',
        "import boto3, botocore.session; assert botocore.session.get_session().get_service_model('sqs').protocol == 'json'",
      ]),
  },
  'cfn-lint': {
    install: 'cfn-lint is not on PATH: python3 -m pip install cfn-lint',
    present: () => succeeds('cfn-lint', ['--version']),
  },
} as const satisfies Record<string, Tool>;

export type ToolName = keyof typeof TOOLS;

const found = new Map<ToolName, boolean>();

/** Whether every tool named is here, looked for once per test file. */
export function haveTools(...names: readonly ToolName[]): boolean {
  return names.every((name) => {
    if (!found.has(name)) found.set(name, TOOLS[name].present());
    return found.get(name) === true;
  });
}

/**
 * `describe` where every tool named is here, else `describe.skip` with one line saying what the
 * suite skips and how to install what is missing. Under `TASKWORKER_REQUIRE_TOOLS=1` the suite runs
 * anyway and fails on the missing tool in its first test.
 */
export function describeWithTools(suite: string, ...names: readonly ToolName[]): jest.Describe {
  const missing = names.filter((name) => !haveTools(name));
  if (missing.length === 0) return describe;
  const why = missing.map((name) => TOOLS[name].install).join('; ');
  if (process.env.TASKWORKER_REQUIRE_TOOLS === '1') {
    return ((name: string, body: () => void) =>
      describe(name, () => {
        it(`has ${missing.join(' and ')} (TASKWORKER_REQUIRE_TOOLS=1)`, () => {
          throw new Error(why);
        });
        body();
      })) as unknown as jest.Describe;
  }
  process.stdout.write(`${suite}: skipped, ${why}\n`);
  return describe.skip;
}

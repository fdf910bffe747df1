/**
 * Every runner of the dispatcher assembles its invocation through one function
 * (lib/invocation/invocation.ts: createInvocation): the Lambda handler and dev's containers through
 * DispatcherRuntime, `taskworker/testing`, and the benchmark simulation. A second hand-built
 * assembly is how the test kit once drifted from production (it never ran parked jobs).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Workload } from '../../bench/sim/workloads';
import { resolveConfig } from '../../lib/config/app-config';
import { defineTask } from '../../lib/tasks/task';

// The modules under test are loaded after the mock is in place (this transform does not hoist jest.mock).
jest.doMock('../../lib/invocation/invocation', () => {
  const actual = jest.requireActual('../../lib/invocation/invocation');
  return { ...actual, createInvocation: jest.fn(actual.createInvocation) };
});
const { createInvocation } = jest.requireMock('../../lib/invocation/invocation') as { createInvocation: jest.Mock };
const { runSimulation } = require('../../bench/sim/run') as typeof import('../../bench/sim/run');
const { createTestSystem } = require('../../lib/testing') as typeof import('../../lib/testing');
const { inlineRuntime } = require('../helpers/runtime') as typeof import('../helpers/runtime');

const ROOT = join(__dirname, '..', '..');
const hello = defineTask({ name: 'hello', queue: 'urgent', timeLimitSeconds: 5, run: () => 'hi' });

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return entry === 'node_modules' ? [] : sources(path);
    return /\.tsx?$/.test(path) ? [path] : [];
  });
}

const workerIds = () => createInvocation.mock.calls.map(([ports]) => (ports as { workerId: string }).workerId);

beforeEach(() => createInvocation.mockClear());

describe('one invocation', () => {
  it('only the invocation runs the dispatcher loop, in the library, the handlers, the CLI and the benchmarks', () => {
    const callers = ['lib', 'functions', 'cli', 'bench', 'dashboard']
      .flatMap((dir) => sources(join(ROOT, dir)))
      .filter((file) => /\brunDispatcher\(/.test(readFileSync(file, 'utf8').replace(/^\s*(\*|\/\/).*$/gm, '')))
      .map((file) => relative(ROOT, file));
    expect(callers.sort()).toEqual(['lib/dispatch/loop.ts', 'lib/invocation/invocation.ts']);
  });

  it("the Lambda handler (and dev's containers, which run the built handler) run the runtime, which assembles through createInvocation", () => {
    const handler = readFileSync(join(ROOT, 'functions', 'dispatcher-handler.ts'), 'utf8');
    expect(handler).toMatch(/new DispatcherRuntime\(/);
    expect(readFileSync(join(ROOT, 'lib', 'local', 'runner.ts'), 'utf8')).toMatch(/require\(join\(__dirname, 'index\.js'\)\)/);
  });

  it('the runtime assembles its invocation once per container', async () => {
    const config = resolveConfig({ app: 't', queues: [{ name: 'urgent', priority: 1, visibilityTimeoutSeconds: 30 }] });
    const { runtime, sqs, urls } = inlineRuntime(config, [hello], { workerId: 'lambda-container' });
    await sqs.sendBatch(urls.queues.urgent, [{ id: '0', body: JSON.stringify({ task: 'hello' }) }]);
    await runtime.invoke(Date.now() + 2_000);
    await runtime.invoke(Date.now() + 1_000);
    expect(workerIds()).toEqual(['lambda-container']);
    await runtime.close();
  });

  it('taskworker/testing assembles through it', async () => {
    const system = createTestSystem({ tasks: [hello] });
    await system.publish(hello, {});
    await system.drain();
    expect(workerIds()).toEqual(['test-system']);
  });

  it('the simulation assembles every simulated container through it', async () => {
    const workload: Workload = { name: 'tiny', description: '1 minute at 0.5', minutes: 1, warmupMinutes: 0, profile: [[0, 0.5]] };
    await runSimulation({ workload, selector: 'sla-aware', seeds: [1], fleet: { dispatchers: 2, concurrency: 4, invocationSeconds: 60 } });
    expect(workerIds().sort()).toEqual(['sim-0', 'sim-1']);
  });
});

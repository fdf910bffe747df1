import { TaskDefinitionError, UnrecoverableError } from '../../lib/errors';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask, toDefinition } from '../../lib/tasks/task';
import { appConfig } from '../helpers/factories';

const base = { name: 'send-email', queue: 'urgent', timeLimitSeconds: 5, run: () => undefined };

function definitionError(fn: () => unknown): TaskDefinitionError {
  try {
    fn();
  } catch (error) {
    if (error instanceof TaskDefinitionError) return error;
    throw error;
  }
  throw new Error('expected a TaskDefinitionError');
}

describe('defineTask', () => {
  it('fills defaults', () => {
    const def = defineTask(base);
    expect(def).toMatchObject({ maxRetries: 3, backoff: { baseSeconds: 2, capSeconds: 300 }, unrecoverable: [] });
  });

  it.each([
    ['name', { ...base, name: 'a/b' }],
    ['name', { ...base, name: '' }],
    ['queue', { ...base, queue: '' }],
    ['timeLimitSeconds', { ...base, timeLimitSeconds: 0 }],
    ['timeLimitSeconds', { ...base, timeLimitSeconds: 901 }],
    ['maxRetries', { ...base, maxRetries: -1 }],
    ['backoff', { ...base, backoff: { baseSeconds: 10, capSeconds: 5 } }],
    ['run', { ...base, run: 'nope' }],
    ['unrecoverable', { ...base, unrecoverable: ['Error'] }],
  ])('rejects a bad %s, naming it', (field, options) => {
    const error = definitionError(() => toDefinition(options, 'tasks/x.ts'));
    expect(error.field).toBe(field);
  });

  it('names the module file when its default export is not a task', () => {
    const error = definitionError(() => toDefinition(undefined, 'tasks/helpers.ts'));
    expect(error.message).toContain('tasks/helpers.ts');
  });
});

describe('createRegistry', () => {
  const config = appConfig();

  it('registers tasks by name', () => {
    const registry = createRegistry(
      [defineTask(base), defineTask({ ...base, name: 'other', unrecoverable: [UnrecoverableError] })],
      config,
    );
    expect([...registry.keys()]).toEqual(['send-email', 'other']);
  });

  it('rejects duplicate names', () => {
    expect(definitionError(() => createRegistry([defineTask(base), defineTask(base)], config)).field).toBe('name');
  });

  it('rejects an unknown queue', () => {
    expect(definitionError(() => createRegistry([defineTask({ ...base, queue: 'nowhere' })], config)).field).toBe('queue');
  });

  it("applies Kale's check: the time limit plus kill grace must fit the queue's visibility timeout", () => {
    const error = definitionError(() => createRegistry([defineTask({ ...base, timeLimitSeconds: 30 })], config));
    expect(error.field).toBe('timeLimitSeconds');
    expect(error.message).toContain('visibilityTimeoutSeconds 30');
  });

  it('on an untracked queue, requires attempts to end before SQS redrive to the DLQ (receives count attempts there)', () => {
    for (const tracking of ['failures', 'off'] as const) {
      const untracked = appConfig({ queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, tracking }] });
      const error = definitionError(() => createRegistry([defineTask({ ...base, maxRetries: 9 })], untracked));
      expect(error.field).toBe('maxRetries');
    }
  });

  it('on a full tracked queue, allows more attempts than receives: the dispatcher requeues before redrive', () => {
    expect(createRegistry([defineTask({ ...base, maxRetries: 30 })], config).get('send-email')?.maxRetries).toBe(30);
  });
});

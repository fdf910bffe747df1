import { resolveConfig, validateVersion } from '../../lib/config/app-config';
import { ConfigError } from '../../lib/errors';
import { archiveQueueName, deadLetterQueueName, queueResourceName } from '../../lib/layout/queues';

const kale = {
  app: 'taskworker',
  queues: [
    { name: 'high_priority', priority: 100, batchSize: 10, visibilityTimeoutSeconds: 60, longPollSeconds: 1, iterations: 10 },
    { name: 'default', priority: 40, batchSize: 10, visibilityTimeoutSeconds: 60, longPollSeconds: 1, iterations: 5 },
    { name: 'low_priority', priority: 5, batchSize: 10, visibilityTimeoutSeconds: 60, longPollSeconds: 5, iterations: 5 },
  ],
};

function configErrorOf(input: unknown): ConfigError {
  try {
    resolveConfig(input);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('resolveConfig', () => {
  it("accepts Kale's three queues and fills in defaults", () => {
    const config = resolveConfig(kale);
    expect(config.queues.map((q) => [q.name, q.priority, q.longPollSeconds, q.iterations])).toEqual([
      ['high_priority', 100, 1, 10],
      ['default', 40, 1, 5],
      ['low_priority', 5, 5, 5],
    ]);
    expect(config.queues[0]).toMatchObject({ maxReceiveCount: 10, slaSeconds: 60, retentionSeconds: 345_600 });
    expect(config.dispatcher.selector).toBe('sla-aware');
    expect(config.dispatcher.isolation).toBe('threads');
    expect(config.tasksDir).toBe('tasks');
  });

  it('is idempotent on a resolved config', () => {
    const once = resolveConfig(kale);
    expect(resolveConfig(once)).toEqual(once);
  });

  it.each([
    ['queues[0].priority', { ...kale, queues: [{ ...kale.queues[0], priority: 0 }] }, 0],
    ['queues[0].priority', { ...kale, queues: [{ ...kale.queues[0], priority: 101 }] }, 101],
    ['queues[1].batchSize', { ...kale, queues: [kale.queues[0], { ...kale.queues[1], batchSize: 11 }] }, 11],
    ['queues[0].visibilityTimeoutSeconds', { ...kale, queues: [{ ...kale.queues[0], visibilityTimeoutSeconds: 43_201 }] }, 43_201],
    ['queues[0].longPollSeconds', { ...kale, queues: [{ ...kale.queues[0], longPollSeconds: 21 }] }, 21],
    ['queues[0].iterations', { ...kale, queues: [{ ...kale.queues[0], iterations: 1.5 }] }, 1.5],
    ['queues[0].maxReceiveCount', { ...kale, queues: [{ ...kale.queues[0], maxReceiveCount: 0 }] }, 0],
    ['queues[0].retentionSeconds', { ...kale, queues: [{ ...kale.queues[0], retentionSeconds: 1_209_600 }] }, 1_209_600],
    ['queues[0].name', { ...kale, queues: [{ ...kale.queues[0], name: 'High Priority' }] }, 'High Priority'],
    ['queues[1].name', { ...kale, queues: [kale.queues[0], { ...kale.queues[1], name: 'high_priority' }] }, 'high_priority'],
    ['queues[0].name', { ...kale, queues: [{ ...kale.queues[0], name: 'archive' }] }, 'archive'],
    ['app', { ...kale, app: 'Task Worker' }, 'Task Worker'],
    ['queues', { ...kale, queues: [] }, []],
    ['dispatcher.selector', { ...kale, dispatcher: { selector: 'fifo' } }, 'fifo'],
    ['dispatcher.concurrency', { ...kale, dispatcher: { concurrency: 0 } }, 0],
    ['dispatcher.isolation', { ...kale, dispatcher: { isolation: 'process' } }, 'process'],
    ['dispatcher.timeoutSeconds', { ...kale, dispatcher: { timeoutSeconds: 901 } }, 901],
    ['dispatcher.rssLimitMb', { ...kale, dispatcher: { memoryMb: 512, rssLimitMb: 513 } }, 513],
    ['dispatcher.rssLimitMb', { ...kale, dispatcher: { rssLimitMb: 63 } }, 63],
    ['dispatcher.rssLimitMb', { ...kale, dispatcher: { rssLimitMb: '900' } }, '900'],
  ])('names %s when it is invalid', (field, input, value) => {
    const error = configErrorOf(input);
    expect(error.field).toBe(field);
    expect(error.value).toEqual(value);
    expect(error.message).toContain(field);
  });

  it('lists succeeded jobs from the index on full queues unless told not to, and refuses it where no success is recorded', () => {
    const withTracking = (tracking: string, listSucceeded?: unknown) => ({
      ...kale,
      queues: [{ ...kale.queues[0], tracking, ...(listSucceeded === undefined ? {} : { listSucceeded }) }],
    });
    expect(resolveConfig(withTracking('full')).queues[0]?.listSucceeded).toBe(true);
    expect(resolveConfig(withTracking('full', false)).queues[0]?.listSucceeded).toBe(false);
    expect(resolveConfig(withTracking('failures')).queues[0]?.listSucceeded).toBe(false);
    expect(resolveConfig(withTracking('off')).queues[0]?.listSucceeded).toBe(false);
    const refused = configErrorOf(withTracking('failures', true));
    expect(refused.field).toBe('queues[0].listSucceeded');
    expect(refused.message).toContain("tracking is 'failures'");
    expect(configErrorOf(withTracking('full', 'yes')).field).toBe('queues[0].listSucceeded');
  });

  it('limits the resident set to 90 % of memoryMb unless told otherwise', () => {
    expect(resolveConfig(kale).dispatcher).toMatchObject({ memoryMb: 1024, rssLimitMb: 921 });
    expect(resolveConfig({ ...kale, dispatcher: { memoryMb: 2048 } }).dispatcher.rssLimitMb).toBe(1843);
    expect(resolveConfig({ ...kale, dispatcher: { memoryMb: 2048, rssLimitMb: 1500 } }).dispatcher.rssLimitMb).toBe(1500);
    expect(configErrorOf({ ...kale, dispatcher: { memoryMb: 512, rssLimitMb: 600 } }).message).toBe(
      'Invalid config dispatcher.rssLimitMb = 600: expected an integer 64..512',
    );
  });

  it('rejects a config that is not an object', () => {
    expect(configErrorOf('nope').field).toBe('config');
  });

  it('rejects an app prefix so long that DLQ names pass 80 characters', () => {
    const error = configErrorOf({ ...kale, app: 'a'.repeat(30), queues: [{ name: 'q'.repeat(40), priority: 1 }] });
    expect(error.field).toBe('app');
  });
});

describe('resource names', () => {
  it('carry the app and version', () => {
    expect(queueResourceName('taskworker', 'v42', 'default')).toBe('taskworker-v42-default');
    expect(deadLetterQueueName('taskworker', 'v42', 'default')).toBe('taskworker-v42-default-dlq');
    expect(archiveQueueName('taskworker', 'v42')).toBe('taskworker-v42-archive');
  });

  it('validates versions', () => {
    expect(validateVersion('v42')).toBe('v42');
    expect(() => validateVersion('V 42')).toThrow(ConfigError);
    expect(() => validateVersion(undefined, 'TASKWORKER_VERSION')).toThrow(/TASKWORKER_VERSION/);
  });
});

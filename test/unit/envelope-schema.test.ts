import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { decodeMessage } from '../../lib/wire/event';

const schema = JSON.parse(readFileSync(join(__dirname, '..', '..', 'schema', 'envelope-v1.schema.json'), 'utf8'));
const validate = new Ajv2020({ strict: true, allowUnionTypes: true }).compile(schema);

/** Bodies within the schema's reach (size and depth limits are the codec's alone). */
const corpus: unknown[] = [
  { task: 'send-email' },
  { task: 'send-email', payload: { to: 'x' } },
  { task: 'a.b_c-d', payload: null, id: 'job-1', appData: [1, 'two'], publishedAt: 0, v: 1 },
  { task: 'x', v: 2 },
  { task: 'x', v: '1' },
  { task: '' },
  { task: '../etc/passwd' },
  { task: 'node:fs' },
  { task: 42 },
  { payload: {} },
  { task: 'x', id: '' },
  { task: 'x', id: 'has space' },
  { task: 'x', id: 'x'.repeat(129) },
  { task: 'x', id: 7 },
  { task: 'x', publishedAt: -1 },
  { task: 'x', publishedAt: 1.5 },
  { task: 'x', publishedAt: '2026-01-01' },
  { task: 'x', publishedAt: 8_640_000_000_000_001 },
  { task: 'x', publishedAt: 8_640_000_000_000_000 },
  { task: 'x', extra: 'ignored by both' },
  { task: 'x', id: 'c', dependsOn: ['a', 'b'] },
  { task: 'x', dependsOn: [] },
  { task: 'x', dependsOn: 'a' },
  { task: 'x', dependsOn: ['a', 'a'] },
  { task: 'x', dependsOn: ['has space'] },
  { task: 'x', dependsOn: Array.from({ length: 101 }, (_, i) => `d${i}`) },
  { task: 'x', id: 'sum', awaits: 3 },
  { task: 'x', awaits: 3 },
  { task: 'x', id: 'sum', awaits: 0 },
  { task: 'x', id: 'sum', awaits: 100_001 },
  { task: 'x', id: 'sum.2', memberOf: { id: 'sum', size: 3 } },
  { task: 'x', id: 'sum.2', memberOf: { id: 'sum' } },
  { task: 'x', onDependencyFailure: 'ignore' },
  { task: 'x', onDependencyFailure: 'skip' },
  { task: 'x', tags: ['tenant:42', 'import'] },
  { task: 'x', tags: ['with space'] },
  { task: 'x', tags: ['x'.repeat(65)] },
  { task: 'x', key: 'user-42' },
  { task: 'x', key: 'Zoë Ångström, 42' },
  { task: 'x', key: '' },
  { task: 'x', key: 'x'.repeat(129) },
  { task: 'x', key: 'tab\there' },
  { task: 'x', key: 42 },
  { task: 'x', key: 'acct-7', seq: 1 },
  { task: 'x', key: 'acct-7', seq: 9_007_199_254_740_991 },
  { task: 'x', seq: 0 },
  { task: 'x', seq: -3 },
  { task: 'x', seq: 2.5 },
  { task: 'x', seq: '4' },
  { task: 'x', seq: 9_007_199_254_740_992 },
  { task: 'x', tags: Array.from({ length: 11 }, (_, i) => `t${i}`) },
  { task: 'x', id: 'e1/x', event: { id: 'e1', name: 'orders.created', emittedAt: 5 } },
  { task: 'x', event: { id: 'e1', name: 'orders.created', emittedAt: 5, source: 'shop' } },
  { task: 'x', event: { id: 'e1', name: 'Orders', emittedAt: 5 } },
  { task: 'x', event: { id: 'e1', name: 'orders.created' } },
  { task: 'x', event: 'orders.created' },
  { task: 'x', payloadRef: { bucket: 'shop-v1-123456789012-eu-west-1', key: 'payloads/j/a.json', bytes: 300_000 } },
  { task: 'x', payloadRef: { bucket: 'shop-v1-b', key: 'payloads/j', bytes: 0, sha256: 'a'.repeat(64) } },
  { task: 'x', payloadRef: { bucket: 'shop-v1-b', key: 'payloads/j', bytes: 10_485_760 } },
  { task: 'x', payloadRef: { bucket: 'shop-v1-b', key: 'payloads/j', bytes: 10_485_761 } },
  { task: 'x', payloadRef: { bucket: 'shop-v1-b', key: 'payloads/j', bytes: 1.5 } },
  { task: 'x', payloadRef: { bucket: 'shop-v1-b', key: 'payloads/j' } },
  { task: 'x', payloadRef: { bucket: 'Shop_V1', key: 'payloads/j', bytes: 1 } },
  { task: 'x', payloadRef: { bucket: 'ab', key: 'payloads/j', bytes: 1 } },
  { task: 'x', payloadRef: { bucket: 'shop-v1-b', key: '', bytes: 1 } },
  { task: 'x', payloadRef: { bucket: 'shop-v1-b', key: 'payloads/\n', bytes: 1 } },
  { task: 'x', payloadRef: { bucket: 'shop-v1-b', key: 'payloads/é', bytes: 1 } },
  { task: 'x', payloadRef: { bucket: 'shop-v1-b', key: 'p', bytes: 1, sha256: 'A'.repeat(64) } },
  { task: 'x', payloadRef: { bucket: 'shop-v1-b', key: 'p', bytes: 1 }, payload: null },
  { task: 'x', payloadRef: { bucket: 'shop-v1-b', key: 'p', bytes: 1 }, payload: { a: 1 } },
  { task: 'x', payloadRef: 's3://shop-v1-b/p' },
  { event: 'orders.created' },
  { event: 'orders.created', payload: { orderId: 1 }, id: 'o-1', source: 'shop', emittedAt: 0, appData: null, v: 1 },
  { event: 'orders.created', v: 2 },
  { event: 'Orders.Created' },
  { event: 'orders..created' },
  { event: 'x'.repeat(101) },
  { event: 'orders.created', id: 'has space' },
  { event: 'orders.created', source: 'Shop!' },
  { event: 'orders.created', emittedAt: -5 },
  { event: 'orders.created', id: 'e-1', payloadRef: { bucket: 'shop-v1-b', key: 'payloads/events/e-1/a.json', bytes: 300_000 } },
  { event: 'orders.created', payloadRef: { bucket: 'shop-v1-b', key: 'payloads/events/e', bytes: 1 }, payload: null },
  { event: 'orders.created', payloadRef: { bucket: 'shop-v1-b', key: 'p', bytes: -1 } },
  { event: 'orders.created', payloadRef: 's3://shop-v1-b/p' },
  { event: 42 },
  [],
  'task',
  null,
];

describe('the published JSON Schema', () => {
  it.each(corpus.map((body) => [JSON.stringify(body), body]))('agrees with the codec on %s', (_label, body) => {
    let decoded = true;
    try {
      decodeMessage(JSON.stringify(body), { messageId: 'm', sentTimestamp: 1 });
    } catch {
      decoded = false;
    }
    expect(validate(body)).toBe(decoded);
  });

  it('accepts its own examples, of tasks and of events', () => {
    const examples = [...schema.$defs.task.examples, ...schema.$defs.event.examples];
    expect(examples.length).toBeGreaterThan(4);
    for (const example of examples) expect(validate(example)).toBe(true);
  });
});

/**
 * Two apps on one local stack: the shop app's `taskworker dev` and the billing app's, joined to
 * the shop's emulators (`startLocalStack({ join })`, what `taskworker dev --join DIR` does). One
 * emit from the shop runs its own subscribers and the billing app's, each once (read from each
 * app's jobs table); stopping the joined app leaves the shop's emulators and dispatchers working.
 */
import { join } from 'node:path';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { eventually } from '../helpers/run';

const FIXTURES = join(__dirname, '..', 'fixtures', 'events');

describe('two apps on one taskworker dev stack', () => {
  let shop: LocalStack;
  let billing: LocalStack | undefined;

  beforeAll(async () => {
    // The version the billing app's config subscribes to (twshop ev1).
    shop = await startLocalStack({ configFile: join(FIXTURES, 'shop', 'taskworker.config.ts'), version: 'ev1' });
    billing = await startLocalStack({
      configFile: join(FIXTURES, 'billing', 'taskworker.config.ts'),
      version: 'dev',
      join: { sqsEndpoint: shop.endpoints.sqs, dynamodbEndpoint: shop.endpoints.dynamodb },
    });
  }, 180_000);
  afterAll(async () => {
    await billing?.stop();
    await shop?.stop();
  });

  it('a shop event runs the billing app’s subscriber too; the joined app stops without taking the emulators', async () => {
    expect(billing?.endpoints).toEqual(shop.endpoints);
    await shop.publisher.emit('orders.created', { orderId: 'o-5' }, { id: 'ord-5' });
    const state = async (stack: LocalStack, id: string) => (await stack.jobs.get(id))?.state;
    await eventually(
      'the subscribers in both apps to end',
      async () =>
        (await state(shop, 'ord-5/send-receipt')) === 'succeeded' &&
        (await state(shop, 'ord-5/post-ledger')) === 'succeeded' &&
        (await state(billing as LocalStack, 'ord-5/invoice')) === 'succeeded',
      60_000,
    );
    expect(await (billing as LocalStack).jobs.get('ord-5/invoice')).toMatchObject({ attempt: 1, event: { id: 'ord-5', source: 'twshop' } });
    await billing?.stop();
    billing = undefined;
    // The shop's own work goes on, on the same emulators.
    await shop.publisher.emit('orders.refunded', { orderId: 'o-5' }, { id: 'ref-5' });
    await eventually('the shop to go on', async () => (await state(shop, 'ref-5/post-ledger')) === 'succeeded', 30_000);
  }, 120_000);
});

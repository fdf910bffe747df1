import { startLocalStack } from '../../lib/local/dev';
import { FIXTURE_CONFIG } from '../helpers/emulators';

describe('taskworker dev: stopping', () => {
  it('stops dispatchers cleanly even while they are still loading the handler', async () => {
    const stack = await startLocalStack({ configFile: FIXTURE_CONFIG, dispatchers: 2 });
    const children = [...stack.dispatchers];
    await stack.stop(); // at once: the children have barely started
    expect(children.map((c) => [c.exitCode, c.signalCode])).toEqual([
      [0, null],
      [0, null],
    ]);
  });
});

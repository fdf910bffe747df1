import { isWatchedSource, reloadLine } from '../../cli/dev-watch';
import type { Reloaded } from '../../lib/local/dev';
import type { TaskBundle } from '../../lib/tasks/bundle';

describe('which changed files --watch rebuilds for', () => {
  it.each(['tasks/send-email.ts', 'tasks/deep/util.mjs', 'tasks/data.json', 'taskworker.config.ts'])('%s is source', (file) => {
    expect(isWatchedSource(file)).toBe(true);
  });

  it.each([
    'tasks/sedAlFQ3j',
    'tasks/4913',
    'tasks/.send-email.ts.swp',
    'tasks/.#send-email.ts',
    'tasks/#send-email.ts#',
    'tasks/send-email.ts~',
    'tasks/send-email.ts___jb_tmp___',
    'tasks/send-email.ts.tmp',
  ])('%s is an editor’s temporary file', (file) => {
    expect(isWatchedSource(file)).toBe(false);
  });
});

describe('the line a reload prints', () => {
  const bundle = { tasks: [{ name: 'pack' }, { name: 'receipt' }] } as unknown as TaskBundle;
  const reloaded = (provisioned: Partial<Reloaded['provisioned']>): Reloaded => ({
    bundle,
    provisioned: { queues: [], topics: [], subscribed: [], unsubscribed: [], ...provisioned },
  });

  it('names what the config change created and removed', () => {
    const line = reloadLine(
      reloaded({
        queues: ['mail'],
        topics: ['shop-dev-events'],
        subscribed: [{ queue: 'mail', topic: 'shop-dev-events' }],
        unsubscribed: [{ queue: 'default', topic: 'shop-dev-events' }],
      }),
      2,
    );
    expect(line).toBe(
      'reloaded: 2 task(s): pack, receipt; created queue mail, created topic shop-dev-events, subscribed mail ← shop-dev-events, ' +
        'unsubscribed default ← shop-dev-events; 2 function container(s) restarted',
    );
  });

  it('says nothing of the emulators when a change needed nothing there', () => {
    expect(reloadLine(reloaded({}), 3)).toBe('reloaded: 2 task(s): pack, receipt; 3 function container(s) restarted');
  });
});

import { isWatchedSource } from '../../cli/dev-watch';

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

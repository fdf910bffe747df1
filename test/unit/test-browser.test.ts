/** `npm test`'s first step: gets Debian's Chromium for the browser test, or says in one line why it cannot. */
const { plan } = require('../../scripts/test-browser.cjs') as {
  plan(facts: { chromium: string; present: boolean; uid: number; sudoWithoutPassword: boolean; aptGet: boolean }): {
    action: string;
    sudo?: boolean;
    line?: string;
  };
};

const machine = { chromium: '/usr/bin/chromium', present: false, uid: 1000, sudoWithoutPassword: false, aptGet: true };

describe('getting Chromium for the browser test', () => {
  it('does nothing when Chromium is there', () => {
    expect(plan({ ...machine, present: true })).toEqual({ action: 'none' });
  });

  it('installs it with apt-get as root, and through sudo when sudo needs no password', () => {
    expect(plan({ ...machine, uid: 0 })).toEqual({ action: 'install', sudo: false });
    expect(plan({ ...machine, sudoWithoutPassword: true })).toEqual({ action: 'install', sudo: true });
  });

  it('says in one line why it cannot and how to fix it otherwise', () => {
    for (const facts of [machine, { ...machine, uid: 0, aptGet: false }]) {
      const step = plan(facts);
      expect(step.action).toBe('explain');
      expect(step.line).toMatch(
        /^no Chromium at \/usr\/bin\/chromium.*the browser test will fail; install it \(sudo apt-get install -y chromium\)/,
      );
      expect(step.line).not.toContain('\n');
    }
  });

  it('installs nothing for a CHROMIUM_PATH that names a missing file, which apt-get would not create', () => {
    expect(plan({ ...machine, uid: 0, chromium: '/opt/chrome/chrome' })).toMatchObject({
      action: 'explain',
      line: expect.stringMatching(/CHROMIUM_PATH/),
    });
  });
});

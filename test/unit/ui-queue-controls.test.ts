import type { ApiResponse } from '../../dashboard/api-types';
import { dashboard, json } from '../helpers/dashboard';

/** The controls the dispatchers read, as the operator's status shows them for `queue`. */
async function shown(d: ReturnType<typeof dashboard>, queue: string) {
  const status = await json<ApiResponse<'/api/status'>>(await d.get('/api/status'));
  return status.queues.find((q) => q.queue === queue);
}

describe("taskworker ui: a queue's priority and SLA set at run time (POST /api/queue/control)", () => {
  it('sets priority and SLA over the config until reset; status shows them as overridden beside the configured values', async () => {
    const d = dashboard();
    const set = await d.post('/api/queue/control', { version: 'v1', queue: 'routine', action: 'set', priority: 95, slaSeconds: 30 });
    expect(set.status).toBe(200);
    expect((await json<ApiResponse<'/api/queue/control'>>(set)).control).toEqual({
      priority: 95,
      configuredPriority: 10,
      slaSeconds: 30,
      configuredSlaSeconds: expect.any(Number),
      overridden: ['priority', 'slaSeconds'],
    });
    expect(await shown(d, 'routine')).toMatchObject({
      priority: 95,
      configuredPriority: 10,
      slaSeconds: 30,
      overridden: ['priority', 'slaSeconds'],
    });
    expect(d.logged.join('\n')).toContain('queue set routine');

    await d.post('/api/queue/control', { version: 'v1', queue: 'routine', action: 'reset' });
    expect(await shown(d, 'routine')).toMatchObject({ priority: 10, configuredPriority: 10, overridden: [] });
  });

  it('sets only the field given: an SLA alone leaves the configured priority in force', async () => {
    const d = dashboard();
    await d.post('/api/queue/control', { version: 'v1', queue: 'urgent', action: 'set', slaSeconds: 5 });
    expect(await shown(d, 'urgent')).toMatchObject({ priority: 90, slaSeconds: 5, overridden: ['slaSeconds'] });
  });

  it.each([
    [{ priority: 500 }, 'priority 500: expected an integer from 1 to 100'],
    [{ priority: 'high' }, 'priority "high": expected an integer from 1 to 100'],
    [{ slaSeconds: 0 }, 'slaSeconds 0: expected whole seconds from 1 to 1209600 (14 days)'],
    [{ priority: 20, slaSeconds: 2.5 }, 'slaSeconds 2.5: expected whole seconds'],
  ])('refuses set %j with 400 naming the bad value, and changes nothing', async (values, named) => {
    const d = dashboard();
    const response = await d.post('/api/queue/control', { version: 'v1', queue: 'routine', action: 'set', ...values });
    expect(response.status).toBe(400);
    expect((await json(response)).error).toContain(named);
    expect(await shown(d, 'routine')).toMatchObject({ priority: 10, overridden: [] });
  });

  it('read-only refuses a set and a reset, and changes nothing', async () => {
    const d = dashboard({ readOnly: true });
    for (const body of [
      { version: 'v1', queue: 'routine', action: 'set', priority: 99 },
      { version: 'v1', queue: 'routine', action: 'reset' },
    ]) {
      const response = await d.post('/api/queue/control', body);
      expect(response.status).toBe(403);
      expect((await json(response)).error).toContain('read-only');
    }
    expect(await shown(d, 'routine')).toMatchObject({ priority: 10, overridden: [] });
  });
});

import { API_SHAPES } from '../../dashboard/api-shapes';
import type { ApiResponse } from '../../dashboard/api-types';
import { encodeEventEnvelope } from '../../lib/wire/event';
import { dashboard, json } from '../helpers/dashboard';

/** One orders.placed as SNS delivers it: a copy on each queue with a subscriber (urgent: confirm, routine: points). */
async function placed(d: ReturnType<typeof dashboard>, id: string): Promise<number> {
  const emittedAt = d.w.clock.now();
  const body = encodeEventEnvelope({ event: 'orders.placed', id, source: 'shop', emittedAt, payload: { order: id } });
  await d.w.send('urgent', body);
  await d.w.send('routine', body);
  await d.w.run();
  return emittedAt;
}

describe('taskworker ui: events (GET /api/events, a subscriber job on /api/job)', () => {
  it('lists the events the app emits and receives, each subscriber task here with its queue and today’s counts', async () => {
    const d = dashboard();
    const before = await json<ApiResponse<'/api/events'>>(await d.get('/api/events'));
    expect(before.emits[0]?.subscribers).toEqual([
      { task: 'confirm', queue: 'urgent', today: { succeeded: 0, retried: 0, archived: 0 } },
      { task: 'points', queue: 'routine', today: { succeeded: 0, retried: 0, archived: 0 } },
    ]);

    await placed(d, 'e-1');
    await placed(d, 'e-2');
    const response = await d.get('/api/events?version=v1');
    expect(response.status).toBe(200);
    const events = await json<ApiResponse<'/api/events'>>(response);
    expect(API_SHAPES['/api/events'](events, '/api/events')).toEqual([]);
    expect(events).toEqual({
      version: 'v1',
      emits: [
        {
          name: 'orders.placed',
          description: 'A customer placed an order',
          subscribers: [
            { task: 'confirm', queue: 'urgent', today: { succeeded: 2, retried: 0, archived: 0 } },
            { task: 'points', queue: 'routine', today: { succeeded: 2, retried: 0, archived: 0 } },
          ],
        },
      ],
      // A subscriber's counts are its task's day, whatever event ran it.
      receives: [
        {
          app: 'billing',
          version: 'v2',
          name: 'invoices.paid',
          subscribers: [{ task: 'points', queue: 'routine', today: { succeeded: 2, retried: 0, archived: 0 } }],
        },
      ],
    });
  });

  it("a subscriber's job names its event (name, id, source, emitted time), in the table's shape", async () => {
    const d = dashboard();
    const emittedAt = await placed(d, 'e-9');
    const response = await d.get(`/api/job?id=${encodeURIComponent('e-9/confirm')}`);
    expect(response.status).toBe(200);
    const view = await json<ApiResponse<'/api/job'>>(response);
    expect(API_SHAPES['/api/job'](view, '/api/job')).toEqual([]);
    expect(view.job).toMatchObject({
      jobId: 'e-9/confirm',
      task: 'confirm',
      state: 'succeeded',
      event: { id: 'e-9', name: 'orders.placed', source: 'shop', emittedAt },
    });
  });

  it("the shape check refuses a job whose event lacks its name or time: the page's reading of it is held to the table", () => {
    const job = { jobId: 'j', task: 't', queue: 'q', version: 'v1', state: 'succeeded', attempt: 1, updatedAt: 1, history: [] };
    expect(API_SHAPES['/api/job']({ job: { ...job, event: { id: 'e', emittedAt: 1 } } }, '/api/job')).toEqual([
      '/api/job.job.event.name: expected a string, got nothing',
    ]);
  });
});

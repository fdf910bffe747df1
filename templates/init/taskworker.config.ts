import { defineConfig } from 'taskworker';

/** The one source for `taskworker dev` and the CDK app: queues, dispatcher settings, tracking. */
export default defineConfig({
  app: '{{app}}',
  tasksDir: 'tasks',
  queues: [
    { name: 'urgent', priority: 100, slaSeconds: 10 },
    { name: 'default', priority: 40, slaSeconds: 60 },
  ],
});

import { MemoryJobStore, MemoryStatsStore } from '../../lib/fakes/memory-tracking';
import { jobStoreConformance } from '../conformance/job-store';

jobStoreConformance(
  'in-memory fakes',
  async () => ({ jobs: new MemoryJobStore({ historyLimit: 20, retentionDays: 7 }), stats: new MemoryStatsStore() }),
  async () => {},
);

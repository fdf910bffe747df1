import { MemoryLimitStore } from '../../lib/fakes/memory-limits';
import { MemoryJobStore, MemoryStatsStore } from '../../lib/fakes/memory-tracking';
import { CONFORMANCE_SETTINGS, jobStoreConformance } from '../conformance/job-store';

jobStoreConformance(
  'in-memory fakes',
  async () => ({ jobs: new MemoryJobStore(CONFORMANCE_SETTINGS), stats: new MemoryStatsStore(), limits: new MemoryLimitStore() }),
  async () => {},
);

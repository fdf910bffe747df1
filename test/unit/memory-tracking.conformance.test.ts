import { MemoryJobStore } from '../../lib/fakes/memory-job-store';
import { MemoryLimitStore } from '../../lib/fakes/memory-limits';
import { MemoryStatsStore } from '../../lib/fakes/memory-stats-store';
import { CONFORMANCE_SETTINGS, jobStoreConformance } from '../conformance/job-store';

jobStoreConformance(
  'in-memory fakes',
  async () => ({ jobs: new MemoryJobStore(CONFORMANCE_SETTINGS), stats: new MemoryStatsStore(), limits: new MemoryLimitStore() }),
  async () => {},
);

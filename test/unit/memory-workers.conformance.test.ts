import { MemoryWorkerRegistry } from '../../lib/fakes/memory-workers';
import { workerRegistryConformance } from '../conformance/worker-registry';

workerRegistryConformance(
  'in-memory fake',
  async () => new MemoryWorkerRegistry(),
  async () => {},
);

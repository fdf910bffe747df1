import { MemoryControlStore } from '../../lib/fakes/memory-controls';
import { controlStoreConformance } from '../conformance/controls-store';

controlStoreConformance(
  'in-memory fake',
  async () => new MemoryControlStore(),
  async () => {},
);

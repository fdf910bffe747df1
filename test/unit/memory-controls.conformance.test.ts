import { MemoryControlStore } from '../../lib/fakes/memory-controls';
import { controlStoreConformance, controlStorePauseFirstConformance } from '../conformance/controls-store';

controlStoreConformance(
  'in-memory fake',
  async () => new MemoryControlStore(),
  async () => {},
);

controlStorePauseFirstConformance(
  'in-memory fake',
  async () => new MemoryControlStore(),
  async () => {},
);

import { DynamoStatsStore } from '../../lib/adapters/dynamo-stats-store';
import { DynamoWorkerRegistry } from '../../lib/adapters/dynamo-workers';
import { emptyDuration } from '../../lib/policy/stat-sums';
import { workerRegistryConformance } from '../conformance/worker-registry';
import { onDynaliteTables } from '../helpers/dynalite-tables';

workerRegistryConformance(
  'DynamoDB adapter on dynalite (beside stats items)',
  ...onDynaliteTables(async (dynamo, names) => {
    // A stats item in the same table: the listing leaves it out.
    await new DynamoStatsStore(names.stats, dynamo).add(
      { queue: 'urgent', day: '2026-01-01', counters: { succeeded: 1 }, archived: {}, wait: emptyDuration(), run: emptyDuration() },
      2_000_000_000,
    );
    return new DynamoWorkerRegistry(names.stats, dynamo);
  }),
);

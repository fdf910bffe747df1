import { DynamoLimitStore } from '../../lib/adapters/dynamo-limits';
import { DynamoJobStore, DynamoStatsStore } from '../../lib/adapters/dynamo-tracking';
import { CONFORMANCE_SETTINGS, jobStoreConformance } from '../conformance/job-store';
import { onDynaliteTables } from '../helpers/dynalite-tables';

jobStoreConformance(
  'DynamoDB adapters on dynalite',
  ...onDynaliteTables((dynamo, names) => ({
    jobs: new DynamoJobStore(names.jobs, CONFORMANCE_SETTINGS, dynamo),
    stats: new DynamoStatsStore(names.stats, dynamo),
    limits: new DynamoLimitStore(names.stats, dynamo),
  })),
);

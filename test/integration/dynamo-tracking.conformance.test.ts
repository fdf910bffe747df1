import { DynamoJobStore } from '../../lib/adapters/dynamo-job-store';
import { DynamoLimitStore } from '../../lib/adapters/dynamo-limits';
import { DynamoStatsStore } from '../../lib/adapters/dynamo-stats-store';
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

import { DynamoControlStore } from '../../lib/adapters/dynamo-controls';
import { controlStoreConformance } from '../conformance/controls-store';
import { onDynaliteTables } from '../helpers/dynalite-tables';

controlStoreConformance(
  'DynamoDB adapter on dynalite',
  ...onDynaliteTables((dynamo, names) => new DynamoControlStore(names.stats, dynamo)),
);

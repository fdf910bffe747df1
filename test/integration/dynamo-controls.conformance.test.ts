import { DynamoControlStore } from '../../lib/adapters/dynamo-controls';
import { controlStoreConformance, controlStorePauseFirstConformance } from '../conformance/controls-store';
import { onDynaliteTables } from '../helpers/dynalite-tables';

controlStoreConformance(
  'DynamoDB adapter on dynalite',
  ...onDynaliteTables((dynamo, names) => new DynamoControlStore(names.stats, dynamo)),
);

controlStorePauseFirstConformance(
  'DynamoDB adapter on dynalite',
  ...onDynaliteTables((dynamo, names) => new DynamoControlStore(names.stats, dynamo)),
);

import type { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import type { TaskworkerConfig } from '../lib/config/app-config';
import { TABLES, type TableSpec, tableNames } from '../lib/layout/tables';
import { REMOVAL_POLICIES, TABLE_DEFAULTS } from './defaults';

export interface TaskworkerTablesProps {
  readonly config: TaskworkerConfig;
  /** Release version; part of every table name. */
  readonly version: string;
  /** @default RemovalPolicy.RETAIN: job records outlive the version's stack */
  readonly removalPolicy?: RemovalPolicy;
  /** Refuse `DeleteTable` until this is turned off. @default false */
  readonly deletionProtection?: boolean;
}

/**
 * The version's DynamoDB tables from the layout `taskworker dev` also creates
 * (`lib/layout/tables.ts`): jobs (one item per job, sparse `byQueueState` index, TTL) and stats
 * (one item per queue and day, TTL). On-demand, point-in-time recovery, encrypted.
 *
 * @example
 * ```ts
 * const tables = new TaskworkerTables(stack, 'Tables', { config, version: 'v1' });
 * tables.jobs.grantReadData(operatorRole);
 * ```
 */
export class TaskworkerTables extends Construct {
  public readonly jobs: dynamodb.ITable;
  public readonly stats: dynamodb.ITable;

  constructor(scope: Construct, id: string, props: TaskworkerTablesProps) {
    super(scope, id);
    const names = tableNames(props.config.app, props.version);
    const make = (spec: TableSpec): dynamodb.Table => {
      const table = new dynamodb.Table(this, spec.role === 'jobs' ? 'JobsTable' : 'StatsTable', {
        ...TABLE_DEFAULTS,
        tableName: names[spec.role],
        partitionKey: { name: spec.partitionKey.name, type: attributeType(spec.partitionKey.type) },
        timeToLiveAttribute: spec.ttlAttribute,
        removalPolicy: props.removalPolicy ?? REMOVAL_POLICIES.tables,
        deletionProtection: props.deletionProtection ?? false,
      });
      for (const index of spec.indexes) {
        table.addGlobalSecondaryIndex({
          indexName: index.name,
          partitionKey: { name: index.partitionKey.name, type: attributeType(index.partitionKey.type) },
          sortKey: { name: index.sortKey.name, type: attributeType(index.sortKey.type) },
          projectionType: dynamodb.ProjectionType.ALL,
        });
      }
      return table;
    };
    const spec = (role: TableSpec['role']): TableSpec => {
      const found = TABLES.find((t) => t.role === role);
      if (!found) throw new Error(`table layout has no ${role} table`);
      return found;
    };
    this.jobs = asITable(make(spec('jobs')));
    this.stats = asITable(make(spec('stats')));
  }
}

/**
 * `Table` declares `tableStreamArn: string | undefined` where `ITable` has `tableStreamArn?: string`,
 * which this project's `exactOptionalPropertyTypes` rejects; the runtime shapes are the same.
 */
function asITable(table: dynamodb.Table): dynamodb.ITable {
  return table as unknown as dynamodb.ITable;
}

function attributeType(type: 'S' | 'N'): dynamodb.AttributeType {
  return type === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER;
}

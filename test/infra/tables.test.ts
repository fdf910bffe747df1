import { Match } from 'aws-cdk-lib/assertions';
import { TABLES, tableNames } from '../../lib/layout/tables';
import { synthStack } from '../helpers/infra';

describe('TaskworkerTables', () => {
  const { template } = synthStack({ version: 'v3' });
  const names = tableNames('taskworker', 'v3');

  it.each(TABLES.map((spec) => [spec.role, spec] as const))('%s: key schema, indexes and TTL from the shared layout', (role, spec) => {
    const attributes = new Map<string, string>([[spec.partitionKey.name, spec.partitionKey.type]]);
    for (const index of spec.indexes) {
      attributes.set(index.partitionKey.name, index.partitionKey.type);
      attributes.set(index.sortKey.name, index.sortKey.type);
    }
    const found = template.findResources('AWS::DynamoDB::Table', { Properties: { TableName: names[role] } });
    const [table] = Object.values(found) as Array<{ Properties: Record<string, unknown> }>;
    expect(table?.Properties).toMatchObject({
      KeySchema: [{ AttributeName: spec.partitionKey.name, KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: spec.ttlAttribute, Enabled: true },
    });
    const defined = table?.Properties.AttributeDefinitions as Array<{ AttributeName: string; AttributeType: string }>;
    expect(new Map(defined.map((a) => [a.AttributeName, a.AttributeType]))).toEqual(attributes);
    const indexes = (table?.Properties.GlobalSecondaryIndexes ?? []) as unknown[];
    expect(indexes).toEqual(
      spec.indexes.map((index) => ({
        IndexName: index.name,
        KeySchema: [
          { AttributeName: index.partitionKey.name, KeyType: 'HASH' },
          { AttributeName: index.sortKey.name, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      })),
    );
  });

  it('makes the jobs table queryable by queue and state, newest first, parked jobs by due time, and tagged jobs by tag (sparse indexes)', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      TableName: names.jobs,
      GlobalSecondaryIndexes: [
        Match.objectLike({
          IndexName: 'byQueueState',
          KeySchema: [
            { AttributeName: 'queueState', KeyType: 'HASH' },
            { AttributeName: 'updatedAt', KeyType: 'RANGE' },
          ],
        }),
        Match.objectLike({
          IndexName: 'byDue',
          KeySchema: [
            { AttributeName: 'dueShard', KeyType: 'HASH' },
            { AttributeName: 'runAt', KeyType: 'RANGE' },
          ],
        }),
        Match.objectLike({
          IndexName: 'byTag',
          KeySchema: [
            { AttributeName: 'tag', KeyType: 'HASH' },
            { AttributeName: 'taggedAt', KeyType: 'RANGE' },
          ],
        }),
      ],
    });
  });

  it('bills on demand, keeps point-in-time recovery and encrypts with KMS', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 2);
    template.allResourcesProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
    });
  });

  it('retains job records when the stack is destroyed, unless told not to', () => {
    template.allResources('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    synthStack({ props: { retainData: false } }).template.allResources('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
  });
});

import { DescribeTableCommand, DynamoDBClient, type TableDescription, type UpdateTimeToLiveCommandInput } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { createVersionTables } from '../../lib/adapters/dynamo-admin';
import type { TaskworkerConfigInput } from '../../lib/config/app-config';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { loadConfigModule } from '../../lib/tasks/build';
import { FIXTURE_CONFIG } from '../helpers/emulators';
import { synthStack } from '../helpers/infra';

type Resource = { Properties: Record<string, unknown> };

/**
 * `taskworker dev` and the CDK stack build a version from the same layouts; this holds them to it:
 * every queue and table the template declares exists locally with the same attributes.
 */
describe('local parity: taskworker dev creates what the stack declares', () => {
  let local: LocalStack;
  let template: ReturnType<typeof synthStack>['template'];
  let dynamo: DynamoDBClient;
  const ttlRequests: UpdateTimeToLiveCommandInput[] = [];

  beforeAll(async () => {
    const config = (await loadConfigModule(FIXTURE_CONFIG)) as TaskworkerConfigInput;
    template = synthStack({ version: 'v5', config, configFile: FIXTURE_CONFIG }).template;
    local = await startLocalStack({ configFile: FIXTURE_CONFIG, version: 'v5', dispatchers: 0 });
    dynamo = new DynamoDBClient({
      region: local.region,
      endpoint: local.endpoints.dynamodb,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    // Record what the local table setup asks for (dynalite accepts but does not report TTL).
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'UpdateTimeToLiveCommand') ttlRequests.push(args.input as UpdateTimeToLiveCommandInput);
        return next(args);
      },
      { step: 'initialize' },
    );
    // Idempotent: the same call taskworker dev makes, here to observe it.
    await createVersionTables(dynamo, local.bundle.config, 'v5');
  });
  afterAll(async () => {
    dynamo?.destroy();
    await local?.stop();
  });

  it('queues: same names, visibility timeout, retention and redrive', async () => {
    const declared = template.findResources('AWS::SQS::Queue') as Record<string, Resource>;
    const nameOf = (logicalId: string) => declared[logicalId]?.Properties.QueueName as string;
    expect(Object.keys(declared)).toHaveLength(2 * local.bundle.config.queues.length + 1);
    for (const { Properties: queue } of Object.values(declared)) {
      const { QueueUrl } = await local.sqs.send(new GetQueueUrlCommand({ QueueName: queue.QueueName as string }));
      const { Attributes: actual = {} } = await local.sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }));
      expect({
        name: queue.QueueName,
        visibility: Number(actual.VisibilityTimeout),
        retention: Number(actual.MessageRetentionPeriod),
      }).toEqual({
        name: queue.QueueName,
        visibility: queue.VisibilityTimeout,
        retention: queue.MessageRetentionPeriod,
      });
      const declaredRedrive = queue.RedrivePolicy as { deadLetterTargetArn: { 'Fn::GetAtt': [string, string] }; maxReceiveCount: number };
      if (declaredRedrive) {
        const localRedrive = JSON.parse(actual.RedrivePolicy ?? '{}') as { deadLetterTargetArn: string; maxReceiveCount: number };
        expect({ dlq: localRedrive.deadLetterTargetArn.split(':').pop(), max: Number(localRedrive.maxReceiveCount) }).toEqual({
          dlq: nameOf(declaredRedrive.deadLetterTargetArn['Fn::GetAtt'][0]),
          max: declaredRedrive.maxReceiveCount,
        });
      } else {
        expect(actual.RedrivePolicy).toBeUndefined();
      }
    }
  });

  it('tables: same names, key schema, attribute types, indexes, billing and TTL attribute', async () => {
    const declared = Object.values(template.findResources('AWS::DynamoDB::Table') as Record<string, Resource>);
    expect(declared).toHaveLength(2);
    for (const { Properties: table } of declared) {
      const { Table: actual = {} as TableDescription } = await dynamo.send(
        new DescribeTableCommand({ TableName: table.TableName as string }),
      );
      const sortByName = <T extends { AttributeName?: string | undefined }>(list: T[] | undefined) =>
        [...(list ?? [])].sort((a, b) => String(a.AttributeName).localeCompare(String(b.AttributeName)));
      expect(actual.KeySchema).toEqual(table.KeySchema);
      expect(sortByName(actual.AttributeDefinitions)).toEqual(sortByName(table.AttributeDefinitions as Array<{ AttributeName: string }>));
      expect(
        (actual.GlobalSecondaryIndexes ?? []).map((i) => ({ IndexName: i.IndexName, KeySchema: i.KeySchema, Projection: i.Projection })),
      ).toEqual((table.GlobalSecondaryIndexes as unknown[] | undefined) ?? []);
      expect(actual.BillingModeSummary?.BillingMode).toBe(table.BillingMode);
      const ttl = table.TimeToLiveSpecification as { AttributeName: string; Enabled: boolean };
      expect(ttlRequests).toContainEqual({ TableName: table.TableName, TimeToLiveSpecification: ttl });
    }
  });
});

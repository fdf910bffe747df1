import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { TaskworkerVersion } from '../../infra/version';
import { payloadBucketName } from '../../lib/layout/payloads';
import exampleConfig from '../../taskworker.config';
import { EXAMPLE_CONFIG_FILE, synthStack } from '../helpers/infra';

type Statement = { Effect: string; Action: unknown; Resource: unknown };

function statementsOf(template: Template, roleLogicalId: string): Statement[] {
  const policies = template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleLogicalId }] } });
  return Object.values(policies).flatMap(
    (p) => (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument.Statement,
  );
}

describe('claim-check payloads on AWS: the version’s bucket', () => {
  const { template, stack } = synthStack({ version: 'v5' });
  const [bucketId, bucket] = Object.entries(template.findResources('AWS::S3::Bucket'))[0] as [
    string,
    { Properties: Record<string, unknown> },
  ];

  it('creates one bucket named <app>-<version>-<account>-<region>, encrypted, owner-enforced, public access blocked', () => {
    template.resourceCountIs('AWS::S3::Bucket', 1);
    expect(bucket.Properties.BucketName).toEqual(stack.resolve(payloadBucketName('taskworker', 'v5', stack.account, stack.region)));
    expect(bucket.Properties).toMatchObject({
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
    });
    template.hasOutput('PayloadBucketName', { Value: { Ref: bucketId } });
  });

  it('expires what is left under payloads/ and results/ after the job retention, at least the archive’s 14 days', () => {
    expect(bucket.Properties.LifecycleConfiguration).toEqual({
      Rules: expect.arrayContaining([
        { Id: 'expire-payloads', Prefix: 'payloads/', ExpirationInDays: 14, Status: 'Enabled' },
        { Id: 'expire-results', Prefix: 'results/', ExpirationInDays: 14, Status: 'Enabled' },
        { Id: 'abort-incomplete-uploads', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: 'Enabled' },
      ]),
    });
    const longer = synthStack({ version: 'v6', config: { ...exampleConfig, tracking: { jobRetentionDays: 30 } } });
    const [other] = Object.values(longer.template.findResources('AWS::S3::Bucket')) as Array<{
      Properties: { LifecycleConfiguration: unknown };
    }>;
    expect(JSON.stringify(other?.Properties.LifecycleConfiguration)).toContain('"ExpirationInDays":30');
  });

  it('refuses any request without TLS', () => {
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucketId },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('lets the dispatcher and doorbell roles get and delete objects under payloads/ and put under results/ only, and tells the functions the bucket', () => {
    for (const role of ['DispatcherRole', 'DispatcherDoorbellRole']) {
      const roleId = Object.keys(template.findResources('AWS::IAM::Role')).find((id) => id.startsWith(`Taskworker${role}`)) as string;
      const s3 = statementsOf(template, roleId).filter((s) => JSON.stringify(s.Action).includes('s3:'));
      expect(s3).toEqual([
        {
          Effect: 'Allow',
          Action: ['s3:GetObject', 's3:DeleteObject'],
          Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/payloads/*']] },
        },
        {
          Effect: 'Allow',
          Action: 's3:PutObject',
          Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/results/*']] },
        },
      ]);
    }
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as Array<{
      Properties: { Environment?: { Variables: Record<string, unknown> } };
    }>;
    const withTasks = functions.filter((f) => f.Properties.Environment?.Variables.TASKWORKER_VERSION === 'v5');
    expect(withTasks.length).toBeGreaterThan(1);
    for (const f of withTasks) expect(f.Properties.Environment?.Variables.TASKWORKER_PAYLOAD_BUCKET).toEqual({ Ref: bucketId });
  });

  it('grantPublish({ largePayloads: true }) adds s3:PutObject on payloads/ of the bucket by name; without it, no S3 action', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const orders = new Stack(app, 'Orders');
    const version = new TaskworkerVersion(orders, 'TasksV5', { config: EXAMPLE_CONFIG_FILE, version: 'v5' });
    const large = new iam.Role(orders, 'Importer', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    const small = new iam.Role(orders, 'Mailer', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    version.grantPublish(large, { largePayloads: true });
    version.grantPublish(small);

    const t = Template.fromStack(orders);
    const s3Of = (role: iam.Role) =>
      statementsOf(t, orders.getLogicalId(role.node.defaultChild as never)).filter((s) => JSON.stringify(s.Action).includes('s3:'));
    const [put] = s3Of(large);
    expect(s3Of(large)).toHaveLength(1);
    expect(put?.Action).toBe('s3:PutObject');
    const objects = orders.resolve(
      `arn:${orders.partition}:s3:::${payloadBucketName('taskworker', 'v5', orders.account, orders.region)}/payloads/*`,
    );
    expect(put?.Resource).toEqual(objects);
    expect(s3Of(small)).toEqual([]);
  });

  it('grantPublish({ results: true }) adds s3:GetObject on results/ of the bucket by name, where a result over 1 KB is kept', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const orders = new Stack(app, 'Orders');
    const version = new TaskworkerVersion(orders, 'TasksV5', { config: EXAMPLE_CONFIG_FILE, version: 'v5' });
    const waiter = new iam.Role(orders, 'Waiter', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    version.grantPublish(waiter, { results: true });
    const t = Template.fromStack(orders);
    const s3 = statementsOf(t, orders.getLogicalId(waiter.node.defaultChild as never)).filter((s) =>
      JSON.stringify(s.Action).includes('s3:'),
    );
    expect(s3).toEqual([
      {
        Effect: 'Allow',
        Action: 's3:GetObject',
        Resource: orders.resolve(
          `arn:${orders.partition}:s3:::${payloadBucketName('taskworker', 'v5', orders.account, orders.region)}/results/*`,
        ),
      },
    ]);
  });
});

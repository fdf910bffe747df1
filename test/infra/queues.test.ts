import { Match } from 'aws-cdk-lib/assertions';
import { queueLayout } from '../../lib/layout/queues';
import { MAX_RETENTION_SECONDS } from '../../lib/layout/sqs-limits';
import { synthStack } from '../helpers/infra';

type Resource = { Properties: Record<string, unknown>; DeletionPolicy?: string };

/** SQS queues of a template by QueueName, with their logical ids. */
function queuesByName(template: ReturnType<typeof synthStack>['template']): Map<string, { id: string; resource: Resource }> {
  const found = template.findResources('AWS::SQS::Queue') as Record<string, Resource>;
  return new Map(Object.entries(found).map(([id, resource]) => [resource.Properties.QueueName as string, { id, resource }]));
}

describe('TaskworkerQueues', () => {
  const { template, config } = synthStack({ version: 'v7' });
  const layout = queueLayout(config, 'v7');
  const queues = queuesByName(template);

  it('creates exactly the queues of the shared layout (what taskworker dev creates)', () => {
    expect([...queues.keys()].sort()).toEqual(layout.map((s) => s.resourceName).sort());
    expect([...queues.keys()]).toContain('taskworker-v7-high_priority');
    expect([...queues.keys()]).toContain('taskworker-v7-high_priority-dlq');
    expect([...queues.keys()]).toContain('taskworker-v7-archive');
  });

  it('gives each queue the visibility timeout and retention of its spec', () => {
    for (const spec of layout) {
      expect(queues.get(spec.resourceName)?.resource.Properties).toMatchObject({
        VisibilityTimeout: spec.visibilityTimeoutSeconds,
        MessageRetentionPeriod: spec.retentionSeconds,
      });
    }
    const high = config.queues.find((q) => q.name === 'high_priority');
    expect(queues.get('taskworker-v7-high_priority')?.resource.Properties.VisibilityTimeout).toBe(high?.visibilityTimeoutSeconds);
  });

  it('redrives each main queue to its own DLQ after maxReceiveCount receives', () => {
    for (const q of config.queues) {
      const dlq = queues.get(`taskworker-v7-${q.name}-dlq`);
      expect(queues.get(`taskworker-v7-${q.name}`)?.resource.Properties.RedrivePolicy).toEqual({
        deadLetterTargetArn: { 'Fn::GetAtt': [dlq?.id, 'Arn'] },
        maxReceiveCount: q.maxReceiveCount,
      });
    }
  });

  it('keeps DLQ and archive messages 14 days, longer than any main queue keeps them', () => {
    for (const spec of layout.filter((s) => s.role !== 'main')) {
      expect(queues.get(spec.resourceName)?.resource.Properties.MessageRetentionPeriod).toBe(MAX_RETENTION_SECONDS);
      expect(queues.get(spec.resourceName)?.resource.Properties.RedrivePolicy).toBeUndefined();
    }
    for (const q of config.queues) expect(q.retentionSeconds).toBeLessThan(MAX_RETENTION_SECONDS);
  });

  it('encrypts every queue and denies every request made without TLS', () => {
    for (const { resource } of queues.values()) expect(resource.Properties.SqsManagedSseEnabled).toBe(true);
    const policies = template.findResources('AWS::SQS::QueuePolicy') as Record<string, Resource>;
    const secured = Object.values(policies).flatMap((p) => p.Properties.Queues as Array<{ Ref: string }>);
    expect(secured.map((ref) => ref.Ref).sort()).toEqual([...queues.values()].map((q) => q.id).sort());
    template.allResourcesProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Action: 'sqs:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('destroys drained work queues with the stack but retains the archive and DLQs', () => {
    for (const spec of layout) {
      expect(queues.get(spec.resourceName)?.resource.DeletionPolicy).toBe(spec.role === 'main' ? 'Delete' : 'Retain');
    }
  });

  it('destroys every queue when the stack is told not to retain data', () => {
    const throwaway = queuesByName(synthStack({ props: { retainData: false } }).template);
    for (const { resource } of throwaway.values()) expect(resource.DeletionPolicy).toBe('Delete');
  });

  it('follows a different config: names, counts and redrive come from it', () => {
    const { template: other } = synthStack({
      version: 'v2',
      config: { app: 'shop', queues: [{ name: 'orders', priority: 50, visibilityTimeoutSeconds: 120, maxReceiveCount: 4 }] },
    });
    const names = queuesByName(other);
    expect([...names.keys()].sort()).toEqual(['shop-v2-archive', 'shop-v2-orders', 'shop-v2-orders-dlq']);
    expect(names.get('shop-v2-orders')?.resource.Properties).toMatchObject({
      VisibilityTimeout: 120,
      RedrivePolicy: { maxReceiveCount: 4 },
    });
  });
});

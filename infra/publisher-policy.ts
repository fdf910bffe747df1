import * as iam from 'aws-cdk-lib/aws-iam';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/** Publishing: SendMessage (also authorises SendMessageBatch) and GetQueueUrl to find a queue by name. */
export const PUBLISHER_ACTIONS = ['sqs:SendMessage', 'sqs:GetQueueUrl'];

export interface TaskworkerPublisherPolicyProps {
  /** The work queues publishers may send to (not the DLQs, not the archive). */
  readonly queues: readonly sqs.IQueue[];
  /** @default a generated name */
  readonly managedPolicyName?: string;
  /** Roles, users or groups to attach the policy to. @default none: attach it where the publishers live */
  readonly attachTo?: readonly iam.IRole[];
}

/**
 * A managed policy that lets its holder publish tasks to one version's queues and nothing else:
 * no receive, no delete, no other version. Attach it to a publisher's role; moving publishers to
 * the next version is swapping this policy for that version's.
 *
 * @example
 * ```ts
 * const publish = new TaskworkerPublisherPolicy(stack, 'Publisher', { queues: Object.values(queues.queues) });
 * publish.policy.attachToRole(webAppRole);
 * ```
 */
export class TaskworkerPublisherPolicy extends Construct {
  public readonly policy: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: TaskworkerPublisherPolicyProps) {
    super(scope, id);
    if (props.queues.length === 0) throw new Error('TaskworkerPublisherPolicy: no queues');
    this.policy = new iam.ManagedPolicy(this, 'Policy', {
      ...(props.managedPolicyName ? { managedPolicyName: props.managedPolicyName } : {}),
      description: 'Publish taskworker tasks (SendMessage) to one release version\u2019s queues',
      statements: [new iam.PolicyStatement({ actions: PUBLISHER_ACTIONS, resources: props.queues.map((q) => q.queueArn) })],
    });
    for (const role of props.attachTo ?? []) this.policy.attachToRole(role);
  }
}

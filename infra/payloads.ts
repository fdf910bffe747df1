import { type CfnElement, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { TaskworkerConfig } from '../lib/config/app-config';
import { EVENT_PAYLOAD_PREFIX, PAYLOAD_PREFIX, payloadBucketName, payloadExpiryDays, RESULT_PREFIX } from '../lib/layout/payloads';

/** What the dispatcher does with a claim-checked payload: read it before the task runs, delete it when the job has ended. */
export const PAYLOAD_READ_ACTIONS = ['s3:GetObject', 's3:DeleteObject'];
/** What a publisher of large payloads does: put the object before it sends the pointer. */
export const PAYLOAD_PUT_ACTIONS = ['s3:PutObject'];
/** What the dispatcher does with a result too large for its record: put it before the record that points to it. */
export const RESULT_PUT_ACTIONS = ['s3:PutObject'];
/** What a reader of results does (`publisher.result`, `jobs wait`, the dashboard): get a kept one. */
export const RESULT_READ_ACTIONS = ['s3:GetObject'];

export interface TaskworkerPayloadsProps {
  readonly config: TaskworkerConfig;
  readonly version: string;
  /** @default RemovalPolicy.RETAIN (a removed version's bucket is kept; its lifecycle empties it) */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The version's payload bucket: where payloads too large for a message (under `payloads/`) and
 * results too large for a job record (under `results/`) are kept (claim checks),
 * named `<app>-<version>-<account>-<region>` so publishers find it from their queue URLs. Encrypted
 * (SSE-S3, so a publisher's role needs no key grant), TLS only, public access blocked, owner-enforced
 * (no ACLs), versioning off (an object is written once), and every object under `payloads/` expired
 * by lifecycle after {@link payloadExpiryDays} (the job retention, at least the archive's 14 days); so is every result.
 */
export class TaskworkerPayloads extends Construct {
  public readonly bucket: s3.Bucket;
  /** The ARN pattern of the version's payload objects (`<bucket ARN>/payloads/*`). */
  public readonly objectsArn: string;
  /** The ARN pattern of the version's kept results (`<bucket ARN>/results/*`). With {@link objectsArn}, the only objects any grant names. */
  public readonly resultsArn: string;
  private readonly logicalId: string;

  constructor(scope: Construct, id: string, props: TaskworkerPayloadsProps) {
    super(scope, id);
    const { config, version } = props;
    const stack = Stack.of(this);
    const expiryDays = payloadExpiryDays(config);
    this.bucket = new s3.Bucket(this, 'Bucket', {
      bucketName: payloadBucketName(config.app, version, stack.account, stack.region),
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: false,
      lifecycleRules: [
        { id: 'expire-payloads', prefix: PAYLOAD_PREFIX, expiration: Duration.days(expiryDays) },
        // A kept result lives as long as the record that points to it (the job retention) or longer.
        { id: 'expire-results', prefix: RESULT_PREFIX, expiration: Duration.days(expiryDays) },
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason: `The bucket holds only claim-checked payloads (each written once by a publisher, read and deleted by the version's dispatcher) and results too large for a job record (written by the dispatcher, read by the version's result readers), and expired after ${expiryDays} days; every request is by one of the version's own roles (CloudTrail records them when S3 data events are on). A per-version log bucket would cost more than the objects it watches.`,
    });
    // Subscribing apps in other accounts read large events' payloads; their own grant (see
    // grantSubscribedEventPayloads) is half of it, this bucket's policy the other half.
    if (config.subscriberAccounts.length > 0) {
      this.bucket.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'SubscribersReadEventPayloads',
          principals: config.subscriberAccounts.map((account) => new iam.AccountPrincipal(account)),
          actions: ['s3:GetObject'],
          resources: [this.bucket.arnForObjects(`${EVENT_PAYLOAD_PREFIX}*`)],
        }),
      );
    }
    this.objectsArn = this.bucket.arnForObjects(`${PAYLOAD_PREFIX}*`);
    this.resultsArn = this.bucket.arnForObjects(`${RESULT_PREFIX}*`);
    this.logicalId = stack.resolve(stack.getLogicalId(this.bucket.node.defaultChild as CfnElement)) as string;
  }

  /**
   * Grants `actions` on the payload objects (`payloads/*`) or the kept results (`results/*`) to a
   * role of this stack, and acknowledges cdk-nag's finding on exactly that resource
   * (AwsSolutions-IAM5 names it) with {@link PAYLOAD_OBJECTS_REASON}.
   */
  grantObjects(role: iam.Role, actions: readonly string[], prefix: typeof PAYLOAD_PREFIX | typeof RESULT_PREFIX = PAYLOAD_PREFIX): void {
    role.addToPrincipalPolicy(payloadObjectsStatement(actions, prefix === PAYLOAD_PREFIX ? this.objectsArn : this.resultsArn));
    Validations.of(role.node.findChild('DefaultPolicy')).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${this.logicalId}.Arn>/${prefix}*]`,
      reason: PAYLOAD_OBJECTS_REASON,
    });
  }
}

/**
 * Grants `role` `s3:GetObject` on the events' payloads (`payloads/events/*`) in the bucket of each
 * app this one subscribes to, by name (`<app>-<version>-<account>-<region>`, in the account and
 * region of the subscription's `topicArn`, else this stack's): a large event's claim check points
 * there. A bucket in another account also needs its policy to allow this account: the emitting app
 * lists it in `subscriberAccounts`.
 */
export function grantSubscribedEventPayloads(role: iam.Role, subscriptions: TaskworkerConfig['subscriptions']): void {
  const stack = Stack.of(role);
  for (const sub of subscriptions) {
    const arn = sub.topicArn?.split(':');
    const bucket = payloadBucketName(sub.app, sub.version, arn?.[4] ?? stack.account, arn?.[3] ?? stack.region);
    const objects = `arn:${stack.partition}:s3:::${bucket}/${EVENT_PAYLOAD_PREFIX}*`;
    role.addToPrincipalPolicy(payloadObjectsStatement(['s3:GetObject'], objects));
    Validations.of(role.node.findChild('DefaultPolicy')).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagResource(stack.resolve(objects))}]`,
      reason: `A large event of ${sub.app} ${sub.version} is kept under ${EVENT_PAYLOAD_PREFIX} of its bucket, one object per event: no narrower resource names them; get only.`,
    });
  }
}

/** A resolved ARN as cdk-nag prints it in a finding's id: a joined one's references as `<AWS::Partition>`. */
function nagResource(resolved: string | { 'Fn::Join': [string, unknown[]] }): string {
  if (typeof resolved === 'string') return resolved;
  const [separator, parts] = resolved['Fn::Join'];
  return parts.map((part) => (typeof part === 'string' ? part : `<${(part as { Ref: string }).Ref}>`)).join(separator);
}

/** Why a role's grant on `<bucket>/payloads/*` is as narrow as an object grant gets (acknowledged for cdk-nag's AwsSolutions-IAM5). */
export const PAYLOAD_OBJECTS_REASON =
  "Object keys are made per job (payloads/<job id>/<sha256>.json, results/<job id>/<sha256>.json), so an object grant can name no narrower resource than the version's own bucket under payloads/ or results/; the actions are object-level only (no List, no bucket action), and no other resource of the policy has a wildcard (test/infra/iam-wildcards.test.ts).";

/**
 * One statement on the version's payload objects, `<bucket ARN>/payloads/*` (or its results): the prefix is the
 * narrowest an object grant can be, since keys are made per job. No bucket-level action (no List).
 */
export function payloadObjectsStatement(actions: readonly string[], objectsArn: string): iam.PolicyStatement {
  return new iam.PolicyStatement({ actions: [...actions], resources: [objectsArn] });
}

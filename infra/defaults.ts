/**
 * Secure defaults of every taskworker construct, kept in one place so a review reads them once.
 * Constructs spread these first and let their props override only what is meant to vary.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';

/**
 * Every queue: server-side encryption with SQS-owned keys (publishers in any language need no KMS
 * permission, and no key policy to get wrong) and a policy that denies requests without TLS.
 */
export const QUEUE_DEFAULTS = {
  encryption: sqs.QueueEncryption.SQS_MANAGED,
  enforceSSL: true,
} as const satisfies sqs.QueueProps;

/**
 * Every table: on-demand (idle versions cost nothing, bursts need no capacity planning), point-in-
 * time recovery, encryption at rest under the AWS-managed KMS key (key use shows in CloudTrail).
 */
export const TABLE_DEFAULTS = {
  billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
  pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  encryption: dynamodb.TableEncryption.AWS_MANAGED,
} as const satisfies Partial<dynamodb.TableProps>;

/** The dispatcher function: Lambda's current Node.js runtime on Graviton, source-mapped stack traces. */
export const FUNCTION_DEFAULTS = {
  runtime: lambda.Runtime.NODEJS_24_X,
  architecture: lambda.Architecture.ARM_64,
  handler: 'index.handler',
  // A failed scheduled invocation is not retried: the next one starts within a minute anyway.
  retryAttempts: 0,
  recursiveLoop: lambda.RecursiveLoop.TERMINATE,
  environment: { NODE_OPTIONS: '--enable-source-maps' },
} as const;

/** How long the dispatcher's logs are kept. */
export const LOG_RETENTION = logs.RetentionDays.ONE_MONTH;

/** The schedule that starts a dispatcher: EventBridge's shortest rate. */
export const SCHEDULE_RATE = Duration.minutes(1);

/**
 * What `cdk destroy` does to a version's resources. Work queues and the function go; whatever
 * may still hold something someone needs (the archive, DLQs, job records) is retained, so
 * destroying a version can never lose an archived message. Pass `RemovalPolicy.DESTROY` to
 * a construct's `removalPolicy` for throw-away versions.
 */
export const REMOVAL_POLICIES = {
  workQueues: RemovalPolicy.DESTROY,
  parkedQueues: RemovalPolicy.RETAIN,
  tables: RemovalPolicy.RETAIN,
  logs: RemovalPolicy.DESTROY,
} as const;

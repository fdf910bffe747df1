/**
 * The AWS SDK clients taskworker builds, in one place: each from a ready client or a client config,
 * never both (Powertools' rule), with HTTP time limits and the missing-region check. Endpoints follow
 * the SDK's own variables (`AWS_ENDPOINT_URL_SQS`, `AWS_ENDPOINT_URL_DYNAMODB`, …). Lambda and
 * CloudWatch clients are in files of their own (lambda-clients.ts, cloudwatch-clients.ts): a
 * publisher loads neither SDK; the emulators' clients are in emulator-clients.ts.
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type * as S3 from '@aws-sdk/client-s3';
import { SNSClient, type SNSClientConfig } from '@aws-sdk/client-sns';
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { DYNAMO_TIMEOUTS, type HttpTimeouts, S3_TIMEOUTS, SNS_TIMEOUTS, SQS_TIMEOUTS, withHttpTimeouts } from './http-timeouts';
import { withRegionCheck } from './region';
import { withSdkLogger } from './sdk-logger';

/**
 * Pass a ready client or a client config, never both. Endpoints follow the SDK
 * (`AWS_ENDPOINT_URL_SQS`). A built client gets {@link SQS_TIMEOUTS} unless `timeouts` or the
 * config's own `requestHandler` says otherwise.
 */
export type SqsClientOption =
  | { readonly client: SQSClient; readonly clientConfig?: never; readonly timeouts?: never }
  | { readonly client?: never; readonly clientConfig?: SQSClientConfig; readonly timeouts?: HttpTimeouts };

export function sqsClientFrom(option: SqsClientOption = {}): SQSClient {
  if (option.client) return option.client;
  const config = withSdkLogger(withHttpTimeouts(option.clientConfig ?? {}, option.timeouts ?? SQS_TIMEOUTS));
  // With an endpoint override (an emulator), send every call there: the SDK would otherwise
  // prefer the queue URL's host, which an emulator's URLs may not resolve to.
  const overridden = config.endpoint !== undefined || Boolean(process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL);
  return withRegionCheck(new SQSClient({ ...(overridden ? { useQueueUrlAsEndpoint: false } : {}), ...config }), 'SQS');
}

/**
 * Pass a ready client or a client config, never both. Endpoints follow the SDK
 * (`AWS_ENDPOINT_URL_DYNAMODB`). A built client gets {@link DYNAMO_TIMEOUTS} unless `timeouts` or
 * the config's own `requestHandler` says otherwise.
 */
export type DynamoClientOption =
  | { readonly client: DynamoDBClient; readonly clientConfig?: never; readonly timeouts?: never }
  | { readonly client?: never; readonly clientConfig?: DynamoDBClientConfig; readonly timeouts?: HttpTimeouts };

export function dynamoClientFrom(option: DynamoClientOption = {}): DynamoDBClient {
  return (
    option.client ??
    withRegionCheck(
      new DynamoDBClient(withSdkLogger(withHttpTimeouts(option.clientConfig ?? {}, option.timeouts ?? DYNAMO_TIMEOUTS))),
      'DynamoDB',
    )
  );
}

/**
 * Pass a ready client or a client config, never both. Endpoints follow the SDK
 * (`AWS_ENDPOINT_URL_SNS`, or fauxqs's one endpoint for SQS, SNS and S3 locally).
 */
export type SnsClientOption =
  | { readonly client: SNSClient; readonly clientConfig?: never }
  | { readonly client?: never; readonly clientConfig?: SNSClientConfig };

export function snsClientFrom(option: SnsClientOption = {}): SNSClient {
  return option.client ?? withRegionCheck(new SNSClient(withSdkLogger(withHttpTimeouts(option.clientConfig ?? {}, SNS_TIMEOUTS))), 'SNS');
}

/**
 * Pass a ready client or a client config, never both. Endpoints follow the SDK
 * (`AWS_ENDPOINT_URL_S3`, or fauxqs's one endpoint for SQS, SNS and S3 locally).
 */
export type S3ClientOption =
  | { readonly client: S3.S3Client; readonly clientConfig?: never }
  | { readonly client?: never; readonly clientConfig?: S3.S3ClientConfig };

/**
 * The S3 client of a payload store, given `@aws-sdk/client-s3` once the store has loaded it (an
 * optional peer: nothing loads it before a payload is first kept or read): the given client, or one
 * made on that first call and kept.
 */
export function s3ClientFrom(option: S3ClientOption = {}): (sdk: typeof S3) => S3.S3Client {
  let made: S3.S3Client | undefined;
  return (sdk) => {
    if (option.client) return option.client;
    made ??= withRegionCheck(new sdk.S3Client(withSdkLogger(withHttpTimeouts(option.clientConfig ?? {}, S3_TIMEOUTS))), 'S3');
    return made;
  };
}

/**
 * The clients of `taskworker dev`'s emulators, as the SDK makes them (no time limits, no region
 * check: the region and endpoints are given): dynalite for DynamoDB, and fauxqs for SQS, SNS and S3
 * on its one endpoint. Apart from clients.ts, which must not load `@aws-sdk/client-s3` (an optional
 * peer) before a payload needs it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import { withSdkLogger } from './sdk-logger';

export interface EmulatorClients {
  readonly sqs: SQSClient;
  readonly dynamo: DynamoDBClient;
  readonly sns: SNSClient;
  readonly s3: S3Client;
}

export function emulatorClients(
  region: string,
  endpoints: { readonly sqsEndpoint: string; readonly dynamodbEndpoint: string },
  credentials: { readonly accessKeyId: string; readonly secretAccessKey: string },
): EmulatorClients {
  const sqs = new SQSClient(withSdkLogger({ region, endpoint: endpoints.sqsEndpoint, credentials }));
  const dynamo = new DynamoDBClient(withSdkLogger({ region, endpoint: endpoints.dynamodbEndpoint, credentials }));
  // fauxqs serves SNS on its SQS endpoint: the version's event topic and subscriptions live there.
  const sns = new SNSClient({ region, endpoint: endpoints.sqsEndpoint, credentials });
  // And S3: the version's payload bucket (claim checks), named from the queue URLs as in AWS.
  const s3 = new S3Client({ region, endpoint: endpoints.sqsEndpoint, credentials });
  return { sqs, dynamo, sns, s3 };
}

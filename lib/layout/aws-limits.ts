/** Limits of the AWS services other than SQS and S3 (those have files of their own) that taskworker's resources run into. */

/** Lambda's longest function timeout: a dispatcher invocation, and so a task's time limit, ends within it. */
export const MAX_LAMBDA_TIMEOUT_SECONDS = 900;
/** SNS takes at most 256 KiB a message: the largest event body. */
export const MAX_SNS_MESSAGE_BYTES = 262_144;
/** DynamoDB's BatchGetItem reads at most 100 keys a call. */
export const MAX_BATCH_GET_KEYS = 100;

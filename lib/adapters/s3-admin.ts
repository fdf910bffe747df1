import { CreateBucketCommand, HeadBucketCommand, type S3Client } from '@aws-sdk/client-s3';

/**
 * Creates a version's payload bucket (claim checks), as the stack does in AWS, for `taskworker dev`,
 * the tests and the benchmarks on fauxqs's S3 (its SQS endpoint). Idempotent: a bucket already
 * there is kept with its objects.
 */
export async function createPayloadBucket(s3: S3Client, bucket: string): Promise<void> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
    return;
  } catch {
    // Not there yet (or not readable): create it; a real failure surfaces from the create.
  }
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    if ((error as { name?: unknown }).name !== 'BucketAlreadyOwnedByYou') throw error;
  }
}

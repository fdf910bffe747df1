/** AWS failures in the words an operator needs: shared by the CLI and the dashboard's server. */

/** Plain words for the AWS failures an operator meets first; undefined for anything else. */
export function explainAwsError(thrown: unknown): string | undefined {
  // By shape, not instanceof: errors raised by Node itself may come from another realm (a VM
  // context, a test runner's sandbox).
  if (typeof thrown !== 'object' || thrown === null || typeof (thrown as Error).message !== 'string') return undefined;
  const error = thrown as Error;
  const code = (error as { code?: string }).code ?? (error as { cause?: { code?: string } }).cause?.code;
  const text = `${error.name} ${error.message}`;
  // A client taskworker built says so as MissingRegionError (lib/aws/region.ts); one handed in, as the SDK does.
  if (error.name === 'MissingRegionError' || /Region is missing/i.test(error.message)) {
    return 'no AWS region: set AWS_REGION (or a profile with a region in AWS_PROFILE), or run `taskworker dev` here for local emulators';
  }
  if (code === 'EADDRINUSE') {
    const port = (error as { port?: number }).port;
    return `port ${port ?? '?'} is already in use: choose another with --sqs-port / --dynamodb-port, or leave them out for free ports`;
  }
  if (error.name === 'CredentialsProviderError' || /Could not load credentials/i.test(error.message)) {
    return 'no AWS credentials found: set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or run `taskworker dev` in this directory for local emulators';
  }
  if (code === 'ECONNREFUSED' || /ECONNREFUSED/.test(text)) {
    return `cannot reach the endpoint (${process.env.AWS_ENDPOINT_URL_SQS ?? process.env.AWS_ENDPOINT_URL_DYNAMODB ?? 'AWS'}): connection refused — is \`taskworker dev\` still running?`;
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || /ENOTFOUND|EAI_AGAIN/.test(text)) {
    return `cannot resolve the AWS endpoint (${error.message}): no network, or a wrong region or endpoint`;
  }
  if (error.name === 'ResourceNotFoundException')
    return `a DynamoDB table of this version does not exist (${error.message}): is the version deployed?`;
  return undefined;
}

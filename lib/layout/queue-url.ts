/**
 * The account and region an SQS queue URL names (`https://sqs.<region>.amazonaws.com/<account>/<name>`,
 * the legacy `https://<region>.queue.amazonaws.com/…`, or an emulator's
 * `http://sqs.<region>.localhost:<port>/<account>/<name>`): how a publisher finds the version's
 * topic and bucket beside the queues it already resolves, with no call and no permission more.
 * Undefined for a URL that names neither.
 */
export function accountAndRegionOf(queueUrl: string): { readonly account: string; readonly region: string } | undefined {
  const url = new URL(queueUrl);
  const account = url.pathname.split('/').filter((p) => p.length > 0)[0];
  const region = /^sqs\.([a-z0-9-]+)\./.exec(url.hostname)?.[1] ?? /^([a-z0-9-]+)\.queue\./.exec(url.hostname)?.[1];
  return account && /^\d{12}$/.test(account) && region ? { account, region } : undefined;
}

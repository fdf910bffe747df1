import { ConfigError } from '../errors';
import { accountAndRegionOf } from './queue-url';

/** The SNS topic of an app's version that its events are published to. */
export function eventTopicName(app: string, version: string): string {
  return `${app}-${version}-events`;
}

/** The topic ARN of `app`'s `version` in the account and region of one of its queue URLs (see {@link accountAndRegionOf}). */
export function topicArnNear(queueUrl: string, app: string, version: string): string {
  const at = accountAndRegionOf(queueUrl);
  if (!at) throw new ConfigError('topicArn', queueUrl, 'a queue URL naming a region and account, or an explicit events.topicArn');
  const partition = at.region.startsWith('cn-') ? 'aws-cn' : at.region.startsWith('us-gov-') ? 'aws-us-gov' : 'aws';
  return `arn:${partition}:sns:${at.region}:${at.account}:${eventTopicName(app, version)}`;
}

/**
 * The DynamoDB tables of a version, described once for the CDK stack and `taskworker dev`.
 *
 * jobs: one item per job, keyed by `jobId`. Jobs in a state operators list (retrying, archived)
 * also carry `queueState` = `<queue>#<state>` and appear in the sparse `byQueueState` index,
 * newest first by `updatedAt`; the common path (claimed, then succeeded) writes no index entries.
 * Parked jobs (runAt more than 15 minutes ahead) also carry `dueShard` and appear in the sparse
 * `byDue` index, earliest first by `runAt`, until a sweep hands them to their queue.
 *
 * A tagged job has one more item per tag, keyed `<jobId> tag <tag>` (job ids and tags have no
 * spaces), in the sparse `byTag` index by `tag`, newest first by `taggedAt`: a tag finds its jobs
 * in every state without a scan. A job that waits for others has its count items beside it,
 * `<jobId> w` and `<jobId> w<shard>` (lib/policy/dependency-rules.ts). A message archived for its envelope
 * (unknown task, id conflict, malformed) keeps its record under its own message id; when it carried
 * an id, that id's item `<id> rejected` holds a string set of those message ids (`messageIds`, at
 * most 100), so `jobs show ID` finds them with one GetItem — no scan, no index, and only
 * rejections pay its one write. No job can take that key (job ids have no spaces).
 *
 * stats: one item per queue and UTC day, keyed by `pk` = `<queue>#<YYYY-MM-DD>`, updated with
 * atomic ADDs (one per queue per batch).
 *
 * Both expire through TTL on `expiresAt` (epoch seconds).
 */
export interface TableSpec {
  readonly role: 'jobs' | 'stats';
  readonly partitionKey: { readonly name: string; readonly type: 'S' };
  readonly ttlAttribute: string;
  readonly indexes: readonly {
    readonly name: string;
    readonly partitionKey: { readonly name: string; readonly type: 'S' };
    readonly sortKey: { readonly name: string; readonly type: 'N' };
  }[];
}

/** DynamoDB table names of a version. */
export function tableNames(app: string, version: string): { jobs: string; stats: string } {
  return { jobs: `${app}-${version}-jobs`, stats: `${app}-${version}-stats` };
}

export const JOBS_BY_QUEUE_STATE_INDEX = 'byQueueState';
export const JOBS_DUE_INDEX = 'byDue';
export const JOBS_BY_TAG_INDEX = 'byTag';
export const TTL_ATTRIBUTE = 'expiresAt';

export const TABLES: readonly TableSpec[] = [
  {
    role: 'jobs',
    partitionKey: { name: 'jobId', type: 'S' },
    ttlAttribute: TTL_ATTRIBUTE,
    indexes: [
      { name: JOBS_BY_QUEUE_STATE_INDEX, partitionKey: { name: 'queueState', type: 'S' }, sortKey: { name: 'updatedAt', type: 'N' } },
      { name: JOBS_DUE_INDEX, partitionKey: { name: 'dueShard', type: 'S' }, sortKey: { name: 'runAt', type: 'N' } },
      { name: JOBS_BY_TAG_INDEX, partitionKey: { name: 'tag', type: 'S' }, sortKey: { name: 'taggedAt', type: 'N' } },
    ],
  },
  {
    role: 'stats',
    partitionKey: { name: 'pk', type: 'S' },
    ttlAttribute: TTL_ATTRIBUTE,
    indexes: [],
  },
];

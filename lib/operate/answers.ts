/**
 * What the operator's actions answer, with nothing that needs Node: the CLI prints these, the
 * dashboard's server sends them and its page reads them (dashboard/api-types.ts).
 */

/** What a replay from the archive did. */
export interface ReplayResult {
  readonly replayed: number;
  /** Matching messages that could not be replayed, with why. */
  readonly skipped: ReadonlyArray<{ messageId: string; why: string }>;
}

export interface RedriveResult {
  readonly queue: string;
  readonly messages: number;
  /** `move-task`: SQS moved them (StartMessageMoveTask); `client`: this process did (receive, send, delete). */
  readonly via?: 'move-task' | 'client';
  /** Why the move task was not used, when the client moved them. */
  readonly moveTaskError?: string;
  readonly taskHandle?: string;
  readonly status?: string;
}

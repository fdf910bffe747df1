import { InvokeCommand, LambdaClient, type LambdaClientConfig } from '@aws-sdk/client-lambda';
import type { DispatcherLauncher } from '../ports';

/** Pass a ready client or a client config, never both. */
export type LambdaClientOption =
  | { readonly client: LambdaClient; readonly clientConfig?: never }
  | { readonly client?: never; readonly clientConfig?: LambdaClientConfig };

/**
 * {@link DispatcherLauncher} on AWS Lambda: asynchronous invocations (`InvocationType: Event`) of
 * the dispatcher function itself. Lambda queues them; the function's reserved concurrency bounds
 * how many run, and its event age limit drops any that could not start within a minute.
 */
export class LambdaLauncher implements DispatcherLauncher {
  private client: LambdaClient | undefined;

  constructor(
    private readonly functionName: string,
    private readonly option: LambdaClientOption = {},
  ) {}

  async launch(count: number, event: object): Promise<number> {
    this.client ??= this.option.client ?? new LambdaClient(this.option.clientConfig ?? {});
    const client = this.client;
    const payload = new TextEncoder().encode(JSON.stringify(event));
    const results = await Promise.allSettled(
      Array.from({ length: count }, () =>
        client.send(new InvokeCommand({ FunctionName: this.functionName, InvocationType: 'Event', Payload: payload })),
      ),
    );
    const accepted = results.filter((r) => r.status === 'fulfilled').length;
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (accepted === 0 && failed) throw failed.reason;
    return accepted;
  }
}

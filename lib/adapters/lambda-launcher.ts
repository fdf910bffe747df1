import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { DispatcherLauncher } from '../ports';

/**
 * {@link DispatcherLauncher} on AWS Lambda: asynchronous invocations (`InvocationType: Event`) of
 * the dispatcher function itself. Lambda queues them; the function's reserved concurrency bounds
 * how many run, and its event age limit drops any that could not start within a minute.
 */
export class LambdaLauncher implements DispatcherLauncher {
  constructor(
    private readonly functionName: string,
    /** The client, made on first use (lib/aws/lambda-clients.ts). */
    private readonly lambda: () => LambdaClient,
  ) {}

  async launch(count: number, event: object): Promise<number> {
    const client = this.lambda();
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

import { Validations } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { synthStack } from '../helpers/infra';

/** Every acknowledgement recorded with `Validations.of(construct).acknowledge(...)` under a scope. */
function acknowledgements(scope: IConstruct): Array<{ path: string; id: string; reason: string }> {
  return scope.node
    .findAll()
    .flatMap((c) =>
      c.node.metadata
        .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((m) => Object.entries(m.data as Record<string, string>).map(([id, reason]) => ({ path: c.node.path, id, reason }))),
    );
}

describe('cdk-nag AwsSolutions checks', () => {
  it.each([
    ['default stack', {}],
    ['stack with a created alarm topic', { alarmTopic: 'create' as const }],
    ['stack that destroys its data', { retainData: false }],
  ])('%s: no unacknowledged finding', (_label, props) => {
    const { app, stack } = synthStack({ props });
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    expect(report.violations).toEqual([]);
    expect(report.success).toBe(true);
    // The same pack as a synth-time validation plugin: synth would throw on a finding.
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
  });

  it('acknowledges only what cannot apply, each with a reason', () => {
    const { stack } = synthStack();
    const acks = acknowledgements(stack);
    // (CDK records the id in its own normalised form, `Annotation::<id>`.)
    const objects = expect.stringMatching(/(^|::)AwsSolutions-IAM5\[Resource::<TaskworkerPayloadsBucket[0-9A-F]{8}\.Arn>\/payloads\/\*\]$/);
    const results = expect.stringMatching(/(^|::)AwsSolutions-IAM5\[Resource::<TaskworkerPayloadsBucket[0-9A-F]{8}\.Arn>\/results\/\*\]$/);
    expect(acks.map(({ path, id }) => ({ path, id }))).toEqual([
      { path: 'Taskworker-taskworker-v1/Taskworker/Queues/ArchiveQueue', id: expect.stringMatching(/(^|::)AwsSolutions-SQS3$/) },
      { path: 'Taskworker-taskworker-v1/Taskworker/Payloads/Bucket', id: expect.stringMatching(/(^|::)AwsSolutions-S1$/) },
      // Exactly the payload objects' and kept results' ARNs on each role, not IAM5 as a whole.
      { path: 'Taskworker-taskworker-v1/Taskworker/Dispatcher/Role/DefaultPolicy', id: objects },
      { path: 'Taskworker-taskworker-v1/Taskworker/Dispatcher/Role/DefaultPolicy', id: results },
      { path: 'Taskworker-taskworker-v1/Taskworker/Dispatcher/DoorbellRole/DefaultPolicy', id: objects },
      { path: 'Taskworker-taskworker-v1/Taskworker/Dispatcher/DoorbellRole/DefaultPolicy', id: results },
    ]);
    const reasons = Object.fromEntries(acks.map((a) => [a.path.split('/').slice(-2).join('/'), a.reason]));
    expect(reasons['Queues/ArchiveQueue']).toMatch(/end of the line.*DLQ behind it would never receive anything/);
    expect(reasons['Payloads/Bucket']).toMatch(/only claim-checked payloads.*results too large for a job record.*expired after 14 days/);
    expect(reasons['Role/DefaultPolicy']).toMatch(/keys are made per job.*no narrower resource/);
    expect(reasons['DoorbellRole/DefaultPolicy']).toBe(reasons['Role/DefaultPolicy']);
  });

  it('would report a queue without encryption, TLS policy or DLQ (the checks are live)', () => {
    const { app, stack } = synthStack();
    new Queue(stack, 'Careless', { encryption: QueueEncryption.UNENCRYPTED });
    const rules = new AwsSolutionsChecks(app).validateScope(stack).violations.map((v) => v.ruleName);
    expect(rules.sort()).toEqual(['AwsSolutions-SQS2', 'AwsSolutions-SQS3', 'AwsSolutions-SQS4']);
  });
});

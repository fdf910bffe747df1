import { Match } from 'aws-cdk-lib/assertions';
import {
  ARCHIVE_ACTIONS,
  DOORBELL_SWITCH_ACTIONS,
  JOBS_TABLE_ACTIONS,
  SELF_INVOKE_ACTIONS,
  STATS_TABLE_ACTIONS,
  SWEEP_ACTIONS,
  WORK_QUEUE_ACTIONS,
} from '../../infra/dispatcher-function';
import { PAYLOAD_READ_ACTIONS, RESULT_PUT_ACTIONS } from '../../infra/payloads';
import { queueUrlsFromEnv } from '../../lib/invocation/dispatcher-runtime';
import { doorbellQueues } from '../../lib/wake-up';
import { synthStack } from '../helpers/infra';

type Properties = Record<string, unknown>;

/** Evaluates `Fn::Join` / `Ref` / `Fn::GetAtt` into a string, writing references as `<Ref:Id>`. */
function evaluate(value: unknown): string {
  if (typeof value === 'string') return value;
  const v = value as { 'Fn::Join'?: [string, unknown[]]; Ref?: string; 'Fn::GetAtt'?: [string, string] };
  if (v.Ref) return `<Ref:${v.Ref}>`;
  if (v['Fn::GetAtt']) return `<${v['Fn::GetAtt'].join('.')}>`;
  if (v['Fn::Join']) return v['Fn::Join'][1].map(evaluate).join(v['Fn::Join'][0]);
  throw new Error(`cannot evaluate ${JSON.stringify(value)}`);
}

function resourceId(template: ReturnType<typeof synthStack>['template'], type: string, properties: Properties): string {
  const ids = Object.keys(template.findResources(type, { Properties: properties }));
  if (ids.length !== 1) throw new Error(`expected one ${type} with ${JSON.stringify(properties)}, found ${ids.length}`);
  return ids[0] as string;
}

describe('TaskworkerDispatcher', () => {
  const { template, config } = synthStack({ version: 'v1' });
  /** The logical id of the event-source mapping that invokes a doorbell function. */
  const mappingIdOf = (functionId: string) =>
    Object.entries(template.findResources('AWS::Lambda::EventSourceMapping')).find(
      ([, m]) => (m as { Properties: { FunctionName: { Ref?: string } } }).Properties.FunctionName.Ref === functionId,
    )?.[0] as string;
  const functionId = resourceId(template, 'AWS::Lambda::Function', { FunctionName: 'taskworker-v1-dispatcher' });
  const fn = template.findResources('AWS::Lambda::Function')[functionId] as { Properties: Properties };
  const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
  const queueId = (name: string) => resourceId(template, 'AWS::SQS::Queue', { QueueName: name });
  const tableId = (name: string) => resourceId(template, 'AWS::DynamoDB::Table', { TableName: name });

  it('runs the artifact on nodejs24.x, arm64, with timeout and memory from the config', () => {
    expect(fn.Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      Timeout: config.dispatcher.timeoutSeconds,
      MemorySize: config.dispatcher.memoryMb,
    });
  });

  it('reserves the configured maximum concurrency: the schedule’s overlap plus room to scale out', () => {
    // Default: 2 × (⌈300 s / 60⌉ + 1); the schedule keeps up to 5 running, scaling out adds up to 6.
    expect(fn.Properties.ReservedConcurrentExecutions).toBe(config.dispatcher.maxConcurrency);
    expect(fn.Properties.ReservedConcurrentExecutions).toBe(12);
    const custom = synthStack({ config: { app: 'x', queues: [{ name: 'q', priority: 1 }], dispatcher: { timeoutSeconds: 900 } } });
    custom.template.hasResourceProperties('AWS::Lambda::Function', { Timeout: 900, ReservedConcurrentExecutions: 32 });
    const capped = synthStack({ config: { app: 'x', queues: [{ name: 'q', priority: 1 }], dispatcher: { maxConcurrency: 7 } } });
    capped.template.hasResourceProperties('AWS::Lambda::Function', { ReservedConcurrentExecutions: 7 });
    synthStack({ props: { reservedConcurrency: 2 } }).template.hasResourceProperties('AWS::Lambda::Function', {
      ReservedConcurrentExecutions: 2,
      Environment: { Variables: Match.objectLike({ TASKWORKER_MAX_CONCURRENCY: '2' }) },
    });
  });

  it('puts a doorbell on each doorbell queue: its own function within the queue’s visibility, an SQS trigger that stays a doorbell', () => {
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')) as Array<{ Properties: Properties }>;
    // The example's queues under a 120 s SLA wake by doorbell; low_priority (300 s) on the schedule.
    expect(doorbellQueues(config).map((q) => q.name)).toEqual(['high_priority', 'default']);
    expect(mappings).toHaveLength(2);
    for (const q of doorbellQueues(config)) {
      const doorbellId = resourceId(template, 'AWS::Lambda::Function', { FunctionName: `taskworker-v1-doorbell-${q.name}` });
      const doorbell = template.findResources('AWS::Lambda::Function')[doorbellId] as { Properties: Properties };
      expect(doorbell.Properties).toMatchObject({ Runtime: 'nodejs24.x', Handler: 'index.handler' });
      // A role of their own: the work's grants, no scaling out, no switching triggers.
      expect(doorbell.Properties.Role).not.toEqual(fn.Properties.Role);
      // Lambda refuses a trigger on a queue whose visibility timeout is shorter than the function's.
      expect(doorbell.Properties.Timeout).toBeLessThanOrEqual(q.visibilityTimeoutSeconds);
      const { TASKWORKER_DOORBELL_MAPPINGS: mappingIds, ...work } = env;
      expect((doorbell.Properties.Environment as { Variables: unknown }).Variables).toEqual(work);
      // The dispatcher knows the triggers it turns off while it works a backlog.
      expect(JSON.stringify(mappingIds)).toContain(mappingIdOf(doorbellId));
      const mapping = mappings.find((m) => (m.Properties.FunctionName as { Ref?: string }).Ref === doorbellId);
      expect(mapping?.Properties).toMatchObject({
        EventSourceArn: { 'Fn::GetAtt': [queueId(`taskworker-v1-${q.name}`), 'Arn'] },
        // The queue's batch, at most the dispatcher's slots less one (a slot kept for a quick job).
        BatchSize: Math.min(q.batchSize, config.dispatcher.concurrency - 1),
        ScalingConfig: { MaximumConcurrency: 2 },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    }
  });

  it('has no trigger on a queue that wakes on the schedule, and no doorbell at all when none does', () => {
    const queues = [
      { name: 'fast', priority: 9, visibilityTimeoutSeconds: 30 },
      { name: 'cheap', priority: 1, wakeUp: 'schedule' as const },
    ];
    const mixed = synthStack({ config: { app: 'x', queues } }).template;
    mixed.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    mixed.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'x-v1-doorbell-fast', Timeout: 30 });
    const none = synthStack({ config: { app: 'x', queues: [queues[1] as (typeof queues)[1]] } }).template;
    none.resourceCountIs('AWS::Lambda::EventSourceMapping', 0);
    none.resourceCountIs('AWS::Lambda::Function', 1);
  });

  it('tells the handler its version, queue URLs (JSON the handler parses), tables and log level', () => {
    expect(env).toMatchObject({
      TASKWORKER_VERSION: 'v1',
      TASKWORKER_LOG_LEVEL: 'INFO',
      TASKWORKER_MAX_CONCURRENCY: '12',
      NODE_OPTIONS: '--enable-source-maps',
      TASKWORKER_JOBS_TABLE: { Ref: tableId('taskworker-v1-jobs') },
      TASKWORKER_STATS_TABLE: { Ref: tableId('taskworker-v1-stats') },
      POWERTOOLS_SERVICE_NAME: 'taskworker',
      POWERTOOLS_METRICS_NAMESPACE: 'Taskworker',
    });
    const urls = queueUrlsFromEnv(evaluate(env.TASKWORKER_QUEUE_URLS));
    expect(urls).toEqual({
      queues: Object.fromEntries(config.queues.map((q) => [q.name, `<Ref:${queueId(`taskworker-v1-${q.name}`)}>`])),
      archive: `<Ref:${queueId('taskworker-v1-archive')}>`,
    });
  });

  it('is started every minute by an EventBridge rule, and may be invoked by it', () => {
    const ruleId = resourceId(template, 'AWS::Events::Rule', { ScheduleExpression: 'rate(1 minute)' });
    template.hasResourceProperties('AWS::Events::Rule', {
      State: 'ENABLED',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [functionId, 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        }),
      ],
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [functionId, 'Arn'] },
      SourceArn: { 'Fn::GetAtt': [ruleId, 'Arn'] },
    });
    // A scheduled invocation that could not start within a minute is dropped, not queued for hours.
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 });
  });

  it('logs to its own group with a retention period', () => {
    const logGroupId = Object.keys(template.findResources('AWS::Logs::LogGroup'))[0] as string;
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
    expect(fn.Properties.LoggingConfig).toEqual({ LogGroup: { Ref: logGroupId } });
  });

  describe('its role (least privilege)', () => {
    const roleId = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const policies = Object.values(template.findResources('AWS::IAM::Policy')) as Array<{ Properties: Properties }>;
    const statements = policies
      .filter((p) => (p.Properties.Roles as Array<{ Ref: string }>).some((r) => r.Ref === roleId))
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Array<{ Action: string | string[]; Resource: unknown }> }).Statement);
    const actionsOn = (resource: unknown) =>
      statements
        .filter((s) => [s.Resource].flat().some((r) => JSON.stringify(r) === JSON.stringify(resource)))
        .flatMap((s) => [s.Action].flat())
        .sort();

    it('receives and settles on the work queues only, and only sends to the archive', () => {
      for (const q of config.queues) {
        expect(actionsOn({ 'Fn::GetAtt': [queueId(`taskworker-v1-${q.name}`), 'Arn'] })).toEqual([...WORK_QUEUE_ACTIONS].sort());
        expect(actionsOn({ 'Fn::GetAtt': [queueId(`taskworker-v1-${q.name}-dlq`), 'Arn'] })).toEqual([]);
      }
      expect(actionsOn({ 'Fn::GetAtt': [queueId('taskworker-v1-archive'), 'Arn'] })).toEqual([...ARCHIVE_ACTIONS].sort());
    });

    it('reads and writes single items of its own tables', () => {
      expect(actionsOn({ 'Fn::GetAtt': [tableId('taskworker-v1-jobs'), 'Arn'] })).toEqual([...JOBS_TABLE_ACTIONS].sort());
      expect(actionsOn({ 'Fn::GetAtt': [tableId('taskworker-v1-stats'), 'Arn'] })).toEqual([...STATS_TABLE_ACTIONS].sort());
    });

    it('may query the due index of its jobs table (the sweep), and no other index', () => {
      const querying = statements.filter((st) => [st.Action].flat().includes('dynamodb:Query'));
      expect(querying).toHaveLength(1);
      expect([querying[0]?.Action].flat()).toEqual(SWEEP_ACTIONS);
      expect([querying[0]?.Resource].flat().map(evaluate)).toEqual([`<${tableId('taskworker-v1-jobs')}.Arn>/index/byDue`]);
    });

    it('may turn its own doorbells’ triggers off and on, and nothing else of Lambda’s', () => {
      const switching = statements.filter((st) => [st.Action].flat().includes('lambda:UpdateEventSourceMapping'));
      expect(switching).toHaveLength(1);
      expect([switching[0]?.Action].flat()).toEqual(DOORBELL_SWITCH_ACTIONS);
      const mappingIds = Object.keys(template.findResources('AWS::Lambda::EventSourceMapping'));
      expect([switching[0]?.Resource].flat().map(evaluate).sort()).toEqual(
        mappingIds
          .map((id) => `arn:<Ref:AWS::Partition>:lambda:<Ref:AWS::Region>:<Ref:AWS::AccountId>:event-source-mapping:<Ref:${id}>`)
          .sort(),
      );
    });

    it('may invoke itself (to scale out) and no other function', () => {
      const invoking = statements.filter((st) => [st.Action].flat().includes('lambda:InvokeFunction'));
      expect(invoking).toHaveLength(1);
      expect([invoking[0]?.Action].flat()).toEqual(SELF_INVOKE_ACTIONS);
      expect([invoking[0]?.Resource].flat().map(evaluate)).toEqual([
        'arn:<Ref:AWS::Partition>:lambda:<Ref:AWS::Region>:<Ref:AWS::AccountId>:function:taskworker-v1-dispatcher',
      ]);
    });

    it('is not allowed to invoke anything when its reserved concurrency leaves no room to scale out', () => {
      const { template: tight } = synthStack({ props: { reservedConcurrency: 6 } });
      const lambdaActions = Object.values(tight.findResources('AWS::IAM::Policy')).flatMap((p) =>
        (
          p as { Properties: { PolicyDocument: { Statement: Array<{ Action: string | string[] }> } } }
        ).Properties.PolicyDocument.Statement.flatMap((st) => [st.Action].flat()),
      );
      expect(lambdaActions.filter((a) => a === 'lambda:InvokeFunction')).toEqual([]);
    });

    it('reads and deletes the payload objects of its own bucket under payloads/, and puts results under results/, nothing else of S3', () => {
      const s3 = statements.filter((st) => JSON.stringify(st.Action).includes('s3:'));
      const bucketId = Object.keys(template.findResources('AWS::S3::Bucket'))[0] as string;
      expect(s3.map((st) => [[st.Action].flat(), [st.Resource].flat().map(evaluate)])).toEqual([
        [PAYLOAD_READ_ACTIONS, [`<${bucketId}.Arn>/payloads/*`]],
        [RESULT_PUT_ACTIONS, [`<${bucketId}.Arn>/results/*`]],
      ]);
    });

    it('has no wildcard action, no wildcard resource but the payload objects, and no AWS managed policy', () => {
      for (const s of statements) {
        for (const action of [s.Action].flat()) expect(action).not.toContain('*');
        // Object keys are made per job: the payload and result prefixes are the object grants (tested above).
        if (JSON.stringify(s.Action).includes('s3:')) continue;
        expect(JSON.stringify(s.Resource)).not.toMatch(/"\*"|\/\*"/);
      }
      const role = template.findResources('AWS::IAM::Role')[roleId] as { Properties: Properties };
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    });
  });
});

import { synthStack } from '../helpers/infra';

interface Statement {
  readonly Effect: 'Allow' | 'Deny';
  readonly Action?: string | string[];
  readonly NotAction?: unknown;
  readonly Principal?: unknown;
  readonly Resource?: unknown;
  readonly NotResource?: unknown;
}

/** Every policy statement of a template: identity policies, inline role policies, resource policies. */
function statements(template: ReturnType<typeof synthStack>['template']): Array<{ resource: string; type: string; statement: Statement }> {
  const resources = (template.toJSON() as { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> }).Resources;
  const out: Array<{ resource: string; type: string; statement: Statement }> = [];
  for (const [resource, { Type: type, Properties: p = {} }] of Object.entries(resources)) {
    const documents = [
      p.PolicyDocument,
      p.KeyPolicy,
      ...((p.Policies as Array<{ PolicyDocument: unknown }> | undefined) ?? []).map((x) => x.PolicyDocument),
    ].filter(Boolean) as Array<{ Statement: Statement[] }>;
    for (const document of documents) for (const statement of document.Statement) out.push({ resource, type, statement });
  }
  return out;
}

/**
 * The alarm topic's KMS key policy holds the two statements AWS documents for it, and no other:
 * the default statement giving the account (its IAM policies, where the rules above hold) the key,
 * in which `Resource: "*"` means this key; and CloudWatch's grant to publish alarms to the
 * encrypted topic (`kms:Decrypt`, `kms:GenerateDataKey*`).
 */
function keyPolicyException(statement: Statement): boolean {
  const json = JSON.stringify(statement);
  const accountRoot = statement.Action === 'kms:*' && /:iam::.*:root/.test(json) && statement.Resource === '*';
  const cloudWatch =
    JSON.stringify(statement.Principal) === JSON.stringify({ Service: 'cloudwatch.amazonaws.com' }) &&
    JSON.stringify([statement.Action].flat().sort()) === JSON.stringify(['kms:Decrypt', 'kms:GenerateDataKey*']);
  return accountRoot || cloudWatch;
}

/**
 * The one reviewed wildcard resource: a dispatcher role's grant on the version's payload objects,
 * `<payload bucket ARN>/payloads/*` (keys are made per job, so no object grant can be narrower),
 * object actions only.
 */
function payloadObjectsException(statement: Statement): boolean {
  const resource = JSON.stringify(statement.Resource);
  const actions = [statement.Action].flat().sort();
  const under = (prefix: string) =>
    resource ===
    `{"Fn::Join":["",[{"Fn::GetAtt":["${resource.match(/TaskworkerPayloadsBucket[0-9A-F]{8}/)?.[0]}","Arn"]},"/${prefix}/*"]]}`;
  return (
    (under('payloads') && JSON.stringify(actions) === JSON.stringify(['s3:DeleteObject', 's3:GetObject'])) ||
    (under('results') && JSON.stringify(actions) === JSON.stringify(['s3:PutObject']))
  );
}

describe('IAM across the whole stack: no wildcard data access', () => {
  // The default stack, and one with every optional resource (a created alarm topic, data not retained).
  const variants = [synthStack({ version: 'v1' }), synthStack({ version: 'v2', props: { alarmTopic: 'create', retainData: false } })];

  it.each(variants.map((v, i) => [i === 0 ? 'default' : 'alarm topic, throw-away data', v] as const))(
    '%s: every Allow names its actions and resources (no *, no NotAction/NotResource, no public principal)',
    (_label, { template }) => {
      const allows = statements(template).filter((s) => s.statement.Effect === 'Allow');
      expect(allows.length).toBeGreaterThan(0);
      for (const { resource, type, statement } of allows) {
        if (type === 'AWS::KMS::Key' && keyPolicyException(statement)) continue;
        if (type === 'AWS::IAM::Policy' && payloadObjectsException(statement)) continue;
        const where = `${resource}: ${JSON.stringify(statement)}`;
        expect([where, statement.NotAction, statement.NotResource]).toEqual([where, undefined, undefined]);
        for (const action of [statement.Action].flat()) expect([where, action]).toEqual([where, expect.not.stringContaining('*')]);
        const resources = JSON.stringify(statement.Resource ?? null);
        // Role trust policies have no Resource; everything else names ARNs (no "*", no "…/*").
        if (statement.Resource !== undefined) expect([where, resources]).toEqual([where, expect.not.stringMatching(/"\*"|[/:]\*"/)]);
        expect([where, JSON.stringify(statement.Principal ?? null)]).toEqual([where, expect.not.stringMatching(/"\*"/)]);
      }
    },
  );

  it('uses wildcards only to deny (the queues and the payload bucket refuse any request without TLS)', () => {
    const wildcard = statements(variants[0]?.template as ReturnType<typeof synthStack>['template']).filter((s) =>
      JSON.stringify(s.statement.Action).includes('*'),
    );
    expect(wildcard.length).toBeGreaterThan(0);
    for (const { statement } of wildcard)
      expect(statement).toMatchObject({
        Effect: 'Deny',
        Action: expect.stringMatching(/^(sqs|s3):\*$/),
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
      });
  });
});

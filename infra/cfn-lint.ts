import type { CfnResource } from 'aws-cdk-lib';

/**
 * Tells cfn-lint (which CI runs on the synthesized templates) to skip checks on one resource,
 * through the resource's `Metadata`, each with the reason it does not apply, kept beside it.
 *
 * @example
 * ignoreCfnLintChecks(dashboard.node.defaultChild as CfnResource, { E3002: 'cfn-lint lags CloudFormation' });
 */
export function ignoreCfnLintChecks(resource: CfnResource, reasons: Record<string, string>): void {
  resource.addMetadata('cfn-lint', { config: { ignore_checks: Object.keys(reasons) } });
  resource.addMetadata('cfn-lint-reasons', reasons);
}

/** A Lambda function's role: CDK adds a DependsOn that the `Role` GetAtt already implies. */
export const REDUNDANT_ROLE_DEPENDENCY = {
  W3005:
    "aws-cdk-lib's lambda.Function adds DependsOn on its role (so the role's policy exists before the function) beside the GetAtt of the role's ARN; the duplicate is harmless",
};

/** `Tags` on `AWS::CloudWatch::Dashboard`, which CloudFormation accepts and cfn-lint's bundled schema does not yet. */
export const DASHBOARD_TAGS = {
  E3002: "cfn-lint's bundled resource schema lags CloudFormation: AWS::CloudWatch::Dashboard accepts Tags (the stack's tags reach it)",
};

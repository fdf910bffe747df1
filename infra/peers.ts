import { optionalDependency } from '../lib/tasks/package-root';

// Loaded before any construct: a project that installed taskworker for publishing alone gets one
// line naming what to install, not a stack trace from deep inside the module loader.
for (const name of ['aws-cdk-lib', 'constructs']) optionalDependency(name, 'taskworker/cdk', () => require.resolve(name));

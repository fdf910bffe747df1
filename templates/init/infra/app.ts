import { App, Stack } from 'aws-cdk-lib';
import { TaskworkerVersion } from 'taskworker/cdk';

// One release version of the task queue in a stack of this app:
//   npx cdk deploy -c version=v1
// Deploy v2 beside v1, move publishers to v2, let v1 drain (`npx taskworker status --version v1`), destroy v1.
const app = new App();
const version = String(app.node.tryGetContext('version') ?? 'v1');
const stack = new Stack(app, `{{app}}-tasks-${version}`);
new TaskworkerVersion(stack, 'Tasks', { config: './taskworker.config.ts', version });

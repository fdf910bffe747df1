import { defineTask, UnrecoverableError } from 'taskworker';

export interface WelcomeEmail {
  readonly to: string;
  readonly name: string;
}

/**
 * An example task: one module per task, default-exporting its definition. Publish it with
 * `npx taskworker publish send-welcome-email --payload '{"to":"ana@example.com","name":"Ana"}'`.
 */
export default defineTask({
  name: 'send-welcome-email',
  queue: 'default',
  timeLimitSeconds: 10,
  maxRetries: 3,
  validate(payload): WelcomeEmail {
    const p = payload as Partial<WelcomeEmail> | null;
    if (typeof p?.to !== 'string' || !p.to.includes('@')) throw new TypeError(`to must be an email address, got ${JSON.stringify(p?.to)}`);
    if (typeof p.name !== 'string' || p.name.length === 0) throw new TypeError('name must be a non-empty string');
    return { to: p.to, name: p.name };
  },
  async run(email, ctx) {
    if (email.to.endsWith('@example.invalid')) throw new UnrecoverableError(`${email.to} cannot receive mail`);
    // Call your mail provider here, passing ctx.signal so the time limit stops the request.
    return { sent: `Welcome, ${email.name}!`, to: email.to, attempt: ctx.attempt };
  },
});

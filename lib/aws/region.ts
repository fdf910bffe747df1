import { MissingRegionError } from '../errors';

/** The parts of an SDK v3 client this reads: its resolved region and its middleware stack. */
interface RegionedClient {
  readonly config: { region(): Promise<string> };
  readonly middlewareStack: {
    add(middleware: unknown, options: { step: 'initialize'; name: string; priority?: 'high' }): void;
  };
}

/**
 * Makes a client taskworker built fail its calls with one {@link MissingRegionError}, naming the
 * service and how to give a region (or reach a running `taskworker dev`), when the SDK finds no
 * region, instead of its own "Region is missing" from deep in the endpoint resolution. Checked
 * before each call until a region is found (the SDK keeps the answer), so an `AWS_REGION` set
 * later still counts. A client handed in by the caller is left as it is.
 */
export function withRegionCheck<C>(client: C, service: string): C {
  const regioned = client as unknown as RegionedClient;
  if (typeof regioned.middlewareStack?.add !== 'function' || typeof regioned.config?.region !== 'function') return client;
  let found = false;
  regioned.middlewareStack.add(
    (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
      if (!found) {
        try {
          await regioned.config.region();
          found = true;
        } catch (error) {
          throw new MissingRegionError(service, { cause: error });
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'taskworkerRegionCheck', priority: 'high' },
  );
  return client;
}

import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS package loaded on its first use instead of when weir/node is imported: every worker thread of a job
 * started with `startJob` imports the job module and with it all of weir/node, so node-postgres, prom-client and
 * cli-progress (together about 100 ms of module loading per thread) would load in every worker of every job, used
 * or not. Synchronous, unlike `lazyPackage`, for the functions that use them synchronously (`new pg.Pool`, a default
 * prom-client registry); a CommonJS package imported by the user is the same module object as this one.
 * @example
 * const pg = lazyRequire<typeof import('pg')>('pg');
 * const pool = new (pg().Pool)({ connectionString });
 */
export function lazyRequire<M>(name: string): () => M {
  let loaded: M | undefined;
  return () => (loaded ??= require(name) as M);
}

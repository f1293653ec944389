/** A package imported on its first use, and what it exported once that import settled. */
export interface LazyPackage<M> {
  load(): Promise<M>;
  /** The package, once loaded; undefined before (then nothing it made can exist yet, an error of its classes included). */
  readonly loaded: M | undefined;
}

/**
 * A connector's client package, imported when the connector first connects rather than when weir/node is imported:
 * every worker thread of a job imports the job module and with it weir/node, so the Redis and NATS clients (a few
 * hundred ms of module loading together) would otherwise load in every worker of every job, used or not.
 * @example
 * const redis = lazyPackage(() => import('redis'));
 * const client = (await redis.load()).createClient({ url });
 */
export function lazyPackage<M>(load: () => Promise<M>): LazyPackage<M> {
  let loading: Promise<M> | undefined;
  let loaded: M | undefined;
  return {
    load: () => (loading ??= load().then((module) => (loaded = module))),
    get loaded() {
      return loaded;
    },
  };
}

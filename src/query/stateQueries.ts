import type { CheckpointStorage, Key, StateDescriptor } from '../core/types.js';
import { yieldToEventLoop } from '../core/yieldToEventLoop.js';
import { copyValue } from '../state/copyValue.js';
import { CheckpointedStates } from './checkpointedStates.js';
import { compareKeys, decodeCursor, encodeCursor, isKey } from './keyOrder.js';
import { InvalidQueryError, QueryableStateUnavailableError, UnknownQueryableStateError } from './queryErrors.js';
import type { LiveQueryableState, QueryableStateEntry, QueryableStateInfo, QueryableStateRegistry } from './queryableStateRegistry.js';

export interface QueryOptions {
  /** Read the state as of this completed, still retained checkpoint instead of the live state. */
  asOf?: number;
}

export interface KeyPageOptions extends QueryOptions {
  /** Only string keys starting with this. */
  prefix?: string;
  /** Only keys ≥ `from` (in key order: booleans, numbers and bigints, strings). */
  from?: Key;
  /** Only keys < `to`. */
  to?: Key;
  /** Keys per page, 1 to 10,000 (100 by default). */
  limit?: number;
  /** The `cursor` of the previous page. */
  cursor?: string;
}

/**
 * A listing of some key groups' keys only: what `ScaleOutQueryClient.keys` asks each member of a scale-out group
 * (`serveScaleOutQueries`) for, the key groups it owns; a single job's server refuses `keyGroups`.
 */
export interface KeyGroupPageOptions extends KeyPageOptions {
  /** The key groups to list, each run by the member asked (else `KeyGroupNotOwnedError`). */
  keyGroups?: number[];
}

/** A page of keys in key order; `cursor` is set when more keys follow. */
export interface KeyPage {
  readonly keys: Key[];
  readonly cursor?: string;
}

/** What can be queried: a running job, or anything standing in for one (the HTTP server takes this). */
export interface QueryableStateReader {
  query<T = unknown>(name: string, key: Key, options?: QueryOptions): Promise<T | undefined>;
  queryKeys(name: string, options?: KeyPageOptions): Promise<KeyPage>;
  queryableStates(): QueryableStateInfo[];
}

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 10_000;
/** Keys a listing looks at between two yields to the event loop, so that a scan of a large state never stalls the job. */
const SCAN_CHUNK = 4_096;
/**
 * Answers queries of a running job's queryable state (Flink's queryable state, in process). Live queries read the
 * current attempt's backends between two records, never during one, since processing is synchronous; while the
 * job restarts they wait for the next attempt. `asOf` queries read a retained checkpoint from storage.
 */
export class StateQueries implements QueryableStateReader {
  private current: QueryableStateRegistry | undefined;
  private latest: QueryableStateRegistry | undefined;
  private ended = false;
  private waiting: (() => void)[] = [];
  private readonly checkpointed: CheckpointedStates;
  /**
   * Queryable states registered by earlier attempts: a restarted attempt registers again at once only those its
   * operators declare, the others when used.
   */
  private readonly known = new Map<string, QueryableStateEntry>();

  constructor(
    private readonly job: string,
    storage: CheckpointStorage | undefined,
  ) {
    this.checkpointed = new CheckpointedStates(job, storage);
  }

  /** An attempt is running: its state can be queried. */
  attach(registry: QueryableStateRegistry): void {
    this.remember();
    this.current = this.latest = registry;
    this.wake();
  }

  /** The attempt ended; live queries wait for the next one. */
  detach(): void {
    this.current = undefined;
  }

  /** The job ended: live queries fail from now on, `asOf` queries go on. */
  end(): void {
    this.ended = true;
    this.current = undefined;
    this.wake();
  }

  queryableStates(): QueryableStateInfo[] {
    this.remember();
    return Array.from(this.known, ([name, { uid, descriptor }]) => ({ name, uid, state: descriptor.name, kind: descriptor.kind }));
  }

  private remember(): void {
    for (const [name, entry] of this.latest?.entriesByName() ?? []) this.known.set(name, entry);
  }

  async query<T = unknown>(name: string, key: Key, options: QueryOptions = {}): Promise<T | undefined> {
    checkName(name);
    if (!isKey(key)) throw new InvalidQueryError(`query of '${name}': the key must be a string, finite number, boolean or bigint, got ${describe(key)}`);
    const asOf = checkAsOf(options.asOf);
    if (asOf !== undefined) {
      const entry = this.lookup(await this.descriptors(), name);
      const state = await this.checkpointed.get(entry, asOf);
      const encoded = state.values.get(key);
      if (encoded === undefined) return undefined;
      return view(entry.descriptor, copyValue(entry.descriptor.serializer.decode(encoded, state.version))) as T;
    }
    const entry = this.lookup(await this.live(), name);
    return view(entry.descriptor, entry.peek(key)) as T;
  }

  async queryKeys(name: string, options: KeyPageOptions = {}): Promise<KeyPage> {
    checkName(name);
    const { prefix, from, to, cursor } = options;
    const limit = options.limit ?? DEFAULT_PAGE_SIZE;
    if (!(Number.isInteger(limit) && limit >= 1 && limit <= MAX_PAGE_SIZE)) {
      throw new InvalidQueryError(`keys of '${name}': limit must be an integer from 1 to ${MAX_PAGE_SIZE}, got ${describe(limit)}`);
    }
    if (prefix !== undefined && typeof prefix !== 'string') throw new InvalidQueryError(`keys of '${name}': prefix must be a string, got ${describe(prefix)}`);
    if (from !== undefined && !isKey(from)) throw new InvalidQueryError(`keys of '${name}': from must be a key, got ${describe(from)}`);
    if (to !== undefined && !isKey(to)) throw new InvalidQueryError(`keys of '${name}': to must be a key, got ${describe(to)}`);
    if (cursor !== undefined && typeof cursor !== 'string') throw new InvalidQueryError(`keys of '${name}': cursor must be a string`);
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const asOf = checkAsOf(options.asOf);

    let keys: Iterable<Key>;
    let registry: QueryableStateRegistry | undefined;
    if (asOf !== undefined) {
      keys = (await this.checkpointed.get(this.lookup(await this.descriptors(), name), asOf)).values.keys();
    } else {
      registry = await this.live();
      keys = this.lookup(registry, name).keys();
    }
    // The `limit + 1` smallest matching keys, kept sorted: O(keys · log limit) with no sort of the whole state.
    const page: Key[] = [];
    let seen = 0;
    for (const key of keys) {
      if (++seen % SCAN_CHUNK === 0) {
        await yieldToEventLoop();
        if (registry !== undefined && !registry.isOpen) {
          throw new QueryableStateUnavailableError(`job '${this.job}' restarted while the keys of '${name}' were listed; list them again`);
        }
      }
      if (prefix !== undefined && (typeof key !== 'string' || !key.startsWith(prefix))) continue;
      if (from !== undefined && compareKeys(key, from) < 0) continue;
      if (to !== undefined && compareKeys(key, to) >= 0) continue;
      if (after !== undefined && compareKeys(key, after) <= 0) continue;
      if (page.length > limit && compareKeys(key, page[limit]!) >= 0) continue;
      page.splice(insertionPoint(page, key), 0, key);
      if (page.length > limit + 1) page.pop();
    }
    if (page.length <= limit) return { keys: page };
    page.pop();
    return { keys: page, cursor: encodeCursor(page[page.length - 1]!) };
  }

  private lookup(registry: QueryableStateRegistry, name: string): LiveQueryableState {
    const entry = registry.lookup(name, this.known.get(name));
    if (entry !== undefined) return entry;
    const known = this.queryableStates().map((info) => `'${info.name}'`);
    throw new UnknownQueryableStateError(
      `job '${this.job}' has no queryable state '${name}' (${known.length > 0 ? `it has ${known.join(', ')}` : 'it has none yet'}); ` +
        `mark a state descriptor { queryable: '${name}' } and list it in its operator's states option ` +
        '(process(fn, { uid, states: [descriptor] })): it is then queryable from the start, while a state not listed ' +
        'becomes queryable only once its operator first uses it',
    );
  }

  /** The running attempt's registry; waits while the job starts or restarts. */
  private async live(): Promise<QueryableStateRegistry> {
    for (;;) {
      if (this.current?.isOpen) return this.current;
      if (this.ended) {
        throw new QueryableStateUnavailableError(
          `job '${this.job}' has ended, so it has no live state; query a retained checkpoint with { asOf: checkpointId }`,
        );
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /** Which states are queryable, for `asOf` queries: the latest attempt's registry, even once the job has ended. */
  private async descriptors(): Promise<QueryableStateRegistry> {
    return this.latest ?? (await this.live());
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = [];
    waiting.forEach((resolve) => resolve());
  }
}

/** What a query returns for a stored value: an aggregating state's result rather than its accumulator. */
function view(descriptor: StateDescriptor<unknown>, stored: unknown): unknown {
  if (stored === undefined) return undefined;
  return descriptor.kind === 'aggregating' ? descriptor.aggregate.getResult(stored) : stored;
}

function insertionPoint(sorted: readonly Key[], key: Key): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareKeys(sorted[middle]!, key) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

function checkName(name: unknown): void {
  if (typeof name !== 'string' || name === '') throw new InvalidQueryError(`a queryable state name must be a non-empty string, got ${describe(name)}`);
}

function checkAsOf(asOf: unknown): number | undefined {
  if (asOf === undefined) return undefined;
  if (!(Number.isSafeInteger(asOf) && (asOf as number) >= 1)) throw new InvalidQueryError(`asOf must be a checkpoint id (an integer ≥ 1), got ${describe(asOf)}`);
  return asOf as number;
}

function describe(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? 'an array' : 'an object';
}

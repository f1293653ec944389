import { keyGroupOf } from '../core/keyGroups.js';
import type { Key, KeyGroupRange, KeyedStateBackend, StateDescriptor, StateKind } from '../core/types.js';
import { QueryableStateConflictError } from './queryErrors.js';

/** A state registered as queryable: the operator holding it and its descriptor. */
export interface QueryableStateEntry {
  readonly uid: string;
  readonly descriptor: StateDescriptor<unknown>;
}

/** A queryable state as the running attempt holds it, across the parallel instances of its operator. */
export interface LiveQueryableState extends QueryableStateEntry {
  /** What `key` holds (the stored form, a copy), read from the instance that owns the key's group. */
  peek(key: Key): unknown;
  /** The keys holding a value, instance after instance, in no particular order. */
  keys(): Iterable<Key>;
}

/** What `running.queryableStates()` lists. */
export interface QueryableStateInfo {
  /** The `queryable` name. */
  readonly name: string;
  /** The operator holding the state. */
  readonly uid: string;
  /** The state's own name within the operator. */
  readonly state: string;
  readonly kind: StateKind;
}

/** One parallel instance's keyed backend and the key groups it owns. */
interface Instance {
  readonly range: KeyGroupRange;
  readonly backend: KeyedStateBackend;
}

/**
 * The queryable states of one attempt of a job (Flink's KvStateRegistry), filled as keyed backends register
 * descriptors that carry a `queryable` name: when the operator starts for the states it declares, else when it
 * first uses them. Closed when the attempt ends: its backends are disposed.
 */
export class QueryableStateRegistry {
  private readonly entries = new Map<string, QueryableStateEntry>();
  /** Each operator's keyed backends, by uid: one per parallel instance, each holding only its own key groups. */
  private readonly instances = new Map<string, Instance[]>();
  private open = true;

  constructor(
    readonly job: string,
    private readonly maxParallelism: number,
  ) {}

  /** Called by a keyed backend for every descriptor it registers; ignores states that are not queryable. */
  register(uid: string, descriptor: StateDescriptor<unknown>): void {
    const name = descriptor.queryable;
    if (name === undefined) return;
    const existing = this.entries.get(name);
    if (existing !== undefined && (existing.uid !== uid || existing.descriptor.name !== descriptor.name)) {
      throw new QueryableStateConflictError(
        `job '${this.job}': queryable name '${name}' is given to state '${existing.descriptor.name}' of operator '${existing.uid}' ` +
          `and to state '${descriptor.name}' of operator '${uid}'; give each queryable state its own name`,
      );
    }
    this.entries.set(name, { uid, descriptor });
  }

  /** A keyed backend of this attempt was created for the instance of operator `uid` owning `range`. */
  addBackend(uid: string, range: KeyGroupRange, backend: KeyedStateBackend): void {
    const instances = this.instances.get(uid);
    if (instances === undefined) this.instances.set(uid, [{ range, backend }]);
    else instances.push({ range, backend });
  }

  /**
   * The state registered as `name`; else, when an earlier attempt registered it (`known`), the same state in this
   * attempt's backends of that operator, which hold it restored even before the operator uses it again.
   */
  lookup(name: string, known?: QueryableStateEntry): LiveQueryableState | undefined {
    const entry = this.entries.get(name) ?? known;
    const instances = entry && this.instances.get(entry.uid);
    if (entry === undefined || instances === undefined) return undefined;
    const { uid, descriptor } = entry;
    const { maxParallelism } = this;
    return {
      uid,
      descriptor,
      peek(key) {
        const group = keyGroupOf(key, maxParallelism);
        const owner = instances.find(({ range }) => range.start <= group && group <= range.end);
        return owner?.backend.peek(descriptor, key);
      },
      *keys() {
        for (const { backend } of instances) yield* backend.keysOf(descriptor);
      },
    };
  }

  entriesByName(): ReadonlyMap<string, QueryableStateEntry> {
    return this.entries;
  }

  get isOpen(): boolean {
    return this.open;
  }

  close(): void {
    this.open = false;
  }
}

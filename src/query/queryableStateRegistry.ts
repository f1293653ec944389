import type { KeyedStateBackend, StateDescriptor, StateKind } from '../core/types';
import { QueryableStateConflictError } from './queryErrors';

/** A state registered as queryable: where it lives in the running attempt. */
export interface QueryableStateEntry {
  readonly uid: string;
  readonly descriptor: StateDescriptor<unknown>;
  readonly backend: KeyedStateBackend;
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

/**
 * The queryable states of one attempt of a job (Flink's KvStateRegistry), filled as keyed backends register
 * descriptors that carry a `queryable` name. Closed when the attempt ends: its backends are disposed.
 */
export class QueryableStateRegistry {
  private readonly entries = new Map<string, QueryableStateEntry>();
  private readonly backends = new Map<string, KeyedStateBackend>();
  private open = true;

  constructor(readonly job: string) {}

  /** Called by a keyed backend for every descriptor it registers; ignores states that are not queryable. */
  register(uid: string, descriptor: StateDescriptor<unknown>, backend: KeyedStateBackend): void {
    const name = descriptor.queryable;
    if (name === undefined) return;
    const existing = this.entries.get(name);
    if (existing !== undefined && (existing.uid !== uid || existing.descriptor.name !== descriptor.name)) {
      throw new QueryableStateConflictError(
        `job '${this.job}': queryable name '${name}' is given to state '${existing.descriptor.name}' of operator '${existing.uid}' ` +
          `and to state '${descriptor.name}' of operator '${uid}'; give each queryable state its own name`,
      );
    }
    this.entries.set(name, { uid, descriptor, backend });
  }

  /** A keyed backend of this attempt was created: states queryable in an earlier attempt are read through it. */
  addBackend(uid: string, backend: KeyedStateBackend): void {
    this.backends.set(uid, backend);
  }

  /**
   * The state registered as `name`; else, when an earlier attempt registered it (`known`), the same state in this
   * attempt's backend of that operator, which holds it restored even before the operator uses it again.
   */
  lookup(name: string, known?: Omit<QueryableStateEntry, 'backend'>): QueryableStateEntry | undefined {
    const entry = this.entries.get(name);
    if (entry !== undefined || known === undefined) return entry;
    const backend = this.backends.get(known.uid);
    return backend === undefined ? undefined : { uid: known.uid, descriptor: known.descriptor, backend };
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

import type { Key, StateDescriptor } from '../../core/types.js';
import { copyValue } from '../copyValue.js';
import { StateTable } from './stateTable.js';

/**
 * One state's tables, one per namespace: the void namespace `''` (state not scoped to a window) always, and one per
 * window while it holds values. Reads of a namespace without values see an empty table that is never written, so
 * looking at a window does not create one.
 */
export class StateFamily<V> {
  readonly void: StateTable<V>;
  readonly tables = new Map<string, StateTable<V>>();
  private readonly empty: StateTable<V>;
  /**
   * With change tracking: the keys written since the last snapshot, by namespace. Kept here rather than on the
   * tables, since a window's table goes when its last key is cleared and that removal is a change too.
   */
  private changes: Map<string, Set<Key>> | undefined;

  constructor(readonly descriptor: StateDescriptor<unknown, V>, trackChanges = false) {
    this.void = new StateTable<V>(descriptor, copyValue);
    this.empty = new StateTable<V>(descriptor, copyValue);
    this.tables.set('', this.void);
    if (trackChanges) {
      this.changes = new Map();
      this.void.changed = this.changedIn('');
    }
  }

  private changedIn(namespace: string): Set<Key> {
    let changed = this.changes!.get(namespace);
    if (changed === undefined) this.changes!.set(namespace, (changed = new Set()));
    return changed;
  }

  /** The keys written since the last call, by namespace, and a fresh change set from now on (undefined untracked). */
  takeChanges(): Map<string, Set<Key>> | undefined {
    const taken = this.changes;
    if (taken === undefined) return undefined;
    this.changes = new Map();
    for (const [namespace, table] of this.tables) table.changed = this.changedIn(namespace);
    return taken;
  }

  /**
   * The window table used last: consecutive records mostly touch the same window, so this saves a map lookup per
   * state access. Only ever a table that is in `tables` (release forgets it).
   */
  private lastNamespace: string | undefined;
  private lastTable: StateTable<V> | undefined;

  read(namespace: string): StateTable<V> {
    if (namespace === '') return this.void;
    if (namespace === this.lastNamespace) return this.lastTable!;
    const table = this.tables.get(namespace);
    if (table === undefined) return this.empty;
    this.lastNamespace = namespace;
    this.lastTable = table;
    return table;
  }

  write(namespace: string): StateTable<V> {
    if (namespace === '') return this.void;
    if (namespace === this.lastNamespace) return this.lastTable!;
    let table = this.tables.get(namespace);
    if (table === undefined) {
      this.tables.set(namespace, (table = new StateTable<V>(this.descriptor, copyValue)));
      if (this.changes !== undefined) table.changed = this.changedIn(namespace);
    }
    this.lastNamespace = namespace;
    this.lastTable = table;
    return table;
  }

  /** Drops a window's table once its last key is gone (a pending snapshot keeps its own reference). */
  release(namespace: string, table: StateTable<V>): void {
    if (namespace !== '' && table.live.size === 0 && this.tables.get(namespace) === table) {
      this.tables.delete(namespace);
      if (namespace === this.lastNamespace) {
        this.lastNamespace = undefined;
        this.lastTable = undefined;
      }
    }
  }
}

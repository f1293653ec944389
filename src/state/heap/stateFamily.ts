import type { StateDescriptor } from '../../core/types';
import { copyValue } from '../copyValue';
import { StateTable } from './stateTable';

/**
 * One state's tables, one per namespace: the void namespace `''` (state not scoped to a window) always, and one per
 * window while it holds values. Reads of a namespace without values see an empty table that is never written, so
 * looking at a window does not create one.
 */
export class StateFamily<V> {
  readonly void: StateTable<V>;
  readonly tables = new Map<string, StateTable<V>>();
  private readonly empty: StateTable<V>;

  constructor(readonly descriptor: StateDescriptor<unknown, V>) {
    this.void = new StateTable<V>(descriptor, copyValue);
    this.empty = new StateTable<V>(descriptor, copyValue);
    this.tables.set('', this.void);
  }

  read(namespace: string): StateTable<V> {
    return namespace === '' ? this.void : (this.tables.get(namespace) ?? this.empty);
  }

  write(namespace: string): StateTable<V> {
    if (namespace === '') return this.void;
    let table = this.tables.get(namespace);
    if (table === undefined) this.tables.set(namespace, (table = new StateTable<V>(this.descriptor, copyValue)));
    return table;
  }

  /** Drops a window's table once its last key is gone (a pending snapshot keeps its own reference). */
  release(namespace: string, table: StateTable<V>): void {
    if (namespace !== '' && table.live.size === 0) this.tables.delete(namespace);
  }
}

import type { AggregateFunction, AggregatingState, Key, ListState, MapState, ReducingState, ValueState } from '../../core/types.js';
import { copyValue } from '../copyValue.js';
import { checkedElements, checkedEntries, rejectNull } from '../stateChecks.js';
import type { StateFamily } from './stateFamily.js';
import type { StateTable } from './stateTable.js';

/** What a heap state object needs from its backend: the key and namespace of the record being processed. */
export interface KeyScope {
  currentKey(stateName: string): Key;
  readonly namespace: string;
}

/**
 * The part every heap state kind shares: finding the table of the current namespace (the void one on the fast
 * path) and dropping a window's table when its last key is cleared.
 */
abstract class HeapState<V> {
  constructor(protected readonly scope: KeyScope, protected readonly family: StateFamily<V>) {}

  protected get name(): string {
    return this.family.descriptor.name;
  }

  protected key(): Key {
    return this.scope.currentKey(this.family.descriptor.name);
  }

  protected readTable(): StateTable<V> {
    return this.family.read(this.scope.namespace);
  }

  protected writeTable(): StateTable<V> {
    return this.family.write(this.scope.namespace);
  }

  protected read(): V | undefined {
    return this.family.read(this.scope.namespace).get(this.key());
  }

  clear(): void {
    const namespace = this.scope.namespace;
    const table = this.family.read(namespace);
    table.delete(this.key());
    this.family.release(namespace, table);
  }
}

export class HeapValueState<T> extends HeapState<T> implements ValueState<T> {
  constructor(
    scope: KeyScope,
    family: StateFamily<T>,
    private readonly defaultValue: T | undefined,
    /** Whether reads may be changed in place by the caller (see `ValueStateDescriptor.immutable`). */
    private readonly mutableReads: boolean,
  ) {
    super(scope, family);
  }

  value(): T | undefined {
    const key = this.key();
    const table = this.readTable();
    // Reads hand out a private copy while a snapshot is pending, so in-place mutation cannot reach the snapshot;
    // values that are only ever replaced need none.
    const value = this.mutableReads && table.snapshotting() ? table.mutable(key) : table.get(key);
    if (value !== undefined) return value;
    const fallback = this.defaultValue;
    return fallback === undefined ? undefined : copyValue(fallback);
  }

  update(value: T | undefined): void {
    if (value === undefined) this.clear();
    else this.writeTable().set(this.key(), value);
  }
}

export class HeapListState<T> extends HeapState<T[]> implements ListState<T> {
  get(): T[] {
    const list = this.read();
    return list === undefined ? [] : list.slice();
  }

  add(value: T): void {
    rejectNull(value, this.name, 'cannot add');
    const key = this.key();
    const table = this.writeTable();
    const list = table.mutable(key);
    if (list === undefined) table.set(key, [value]);
    else list.push(value);
  }

  addAll(values: Iterable<T>): void {
    const added = checkedElements(values, this.name, 'addAll');
    if (added.length === 0) return;
    const key = this.key();
    const table = this.writeTable();
    const list = table.mutable(key);
    if (list === undefined) table.set(key, added === values ? added.slice() : (added as T[]));
    else for (let i = 0; i < added.length; i++) list.push(added[i]!);
  }

  update(values: Iterable<T>): void {
    const checked = checkedElements(values, this.name, 'update');
    if (checked.length === 0) this.clear();
    else this.writeTable().set(this.key(), checked === values ? checked.slice() : (checked as T[]));
  }
}

export class HeapMapState<K, V> extends HeapState<Map<K, V>> implements MapState<K, V> {
  get(key: K): V | undefined {
    return this.read()?.get(key);
  }

  put(key: K, value: V): void {
    if (value === undefined) rejectNull(value, this.name, `cannot put ${String(key)} →`);
    const stateKey = this.key();
    const table = this.writeTable();
    const map = table.mutable(stateKey);
    if (map === undefined) table.set(stateKey, new Map([[key, value]]));
    else map.set(key, value);
  }

  putAll(entries: Iterable<readonly [K, V]> | Map<K, V>): void {
    const checked = checkedEntries(entries, this.name);
    if ((checked instanceof Map ? checked.size : (checked as readonly unknown[]).length) === 0) return;
    const stateKey = this.key();
    const table = this.writeTable();
    let map = table.mutable(stateKey);
    if (map === undefined) table.set(stateKey, (map = new Map<K, V>()));
    for (const [key, value] of checked) map.set(key, value);
  }

  remove(key: K): void {
    if (!this.read()?.has(key)) return;
    const map = this.writeTable().mutable(this.key())!;
    map.delete(key);
    if (map.size === 0) this.clear();
  }

  contains(key: K): boolean {
    return this.read()?.has(key) ?? false;
  }

  entries(): [K, V][] {
    return Array.from(this.read() ?? []);
  }

  keys(): K[] {
    return Array.from(this.read()?.keys() ?? []);
  }

  values(): V[] {
    return Array.from(this.read()?.values() ?? []);
  }

  isEmpty(): boolean {
    return (this.read()?.size ?? 0) === 0;
  }
}

export class HeapReducingState<T> extends HeapState<T> implements ReducingState<T> {
  constructor(scope: KeyScope, family: StateFamily<T>, private readonly reduce: (a: T, b: T) => T) {
    super(scope, family);
  }

  get(): T | undefined {
    return this.read();
  }

  add(value: T): void {
    rejectNull(value, this.name, 'cannot add');
    const key = this.key();
    const table = this.writeTable();
    // The reduce function may change the stored value in place (a window's `reduce` hands it over as `accumulated`):
    // a snapshot still holding it must keep the original.
    const current = table.snapshotting() ? table.mutable(key) : table.get(key);
    table.set(key, current === undefined ? value : this.reduce(current, value));
  }
}

export class HeapAggregatingState<IN, ACC, OUT> extends HeapState<ACC> implements AggregatingState<IN, OUT> {
  constructor(scope: KeyScope, family: StateFamily<ACC>, private readonly aggregate: AggregateFunction<unknown, ACC, unknown>) {
    super(scope, family);
  }

  get(): OUT | undefined {
    const accumulator = this.read();
    return accumulator === undefined ? undefined : (this.aggregate.getResult(accumulator) as OUT);
  }

  add(value: IN): void {
    rejectNull(value, this.name, 'cannot add');
    const key = this.key();
    const table = this.writeTable();
    const { aggregate } = this;
    // `add` may mutate the accumulator in place (Flink allows it), so take a copy-on-write view of it.
    const held = table.mutable(key);
    const accumulator = held ?? aggregate.createAccumulator();
    const added = aggregate.add(value, accumulator);
    // The same accumulator back (changed in place, or not at all, as a maximum mostly is): `mutable` has counted
    // the write and copied what a snapshot holds, so only a new value needs setting.
    if (added !== held || held === undefined) table.set(key, added);
  }
}

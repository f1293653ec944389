import type {
  AggregatingState,
  AggregatingStateDescriptor,
  ListState,
  MapState,
  ReducingState,
  ReducingStateDescriptor,
  ValueState,
  ValueStateDescriptor,
} from '../../core/types.js';
import { copyValue } from '../copyValue.js';
import { checkedElements, checkedEntries, rejectNull } from '../stateChecks.js';
import type { MapRows } from './mapRows.js';
import type { RowStore } from './rowStore.js';
import type { ValueRows } from './valueRows.js';

/*
 * The state kinds over LMDB rows. They mirror the heap states' semantics but not their code: heap states work on
 * copy-on-write tables, these on write-back rows whose snapshots are LMDB read transactions, so no copy is taken
 * on read. As with Flink's RocksDB backend, a value read from state is the backend's to keep only until the next
 * write of another record: change it through `update`/`add`, not in place.
 */

export class LmdbValueState<T> implements ValueState<T> {
  constructor(private readonly store: RowStore, private readonly rows: ValueRows<T>, private readonly descriptor: ValueStateDescriptor<unknown, T>) {}

  value(): T | undefined {
    const value = this.rows.get(this.store.currentKey(this.descriptor.name));
    if (value !== undefined) return value;
    const fallback = this.descriptor.defaultValue;
    return fallback === undefined ? undefined : copyValue(fallback);
  }

  update(value: T | undefined): void {
    const key = this.store.currentKey(this.descriptor.name);
    if (value === undefined) this.rows.delete(key);
    else this.rows.set(key, value);
  }

  clear(): void {
    this.rows.delete(this.store.currentKey(this.descriptor.name));
  }
}

export class LmdbListState<T> implements ListState<T> {
  constructor(private readonly store: RowStore, private readonly rows: ValueRows<T[]>, private readonly name: string) {}

  get(): T[] {
    const list = this.rows.get(this.store.currentKey(this.name));
    return list === undefined ? [] : list.slice();
  }

  add(value: T): void {
    rejectNull(value, this.name, 'cannot add');
    const key = this.store.currentKey(this.name);
    const list = this.rows.get(key);
    if (list === undefined) this.rows.set(key, [value]);
    else {
      list.push(value);
      this.rows.set(key, list);
    }
  }

  addAll(values: Iterable<T>): void {
    const added = checkedElements(values, this.name, 'addAll');
    if (added.length === 0) return;
    const key = this.store.currentKey(this.name);
    const list = this.rows.get(key);
    if (list === undefined) this.rows.set(key, added === values ? added.slice() : (added as T[]));
    else {
      for (let i = 0; i < added.length; i++) list.push(added[i]!);
      this.rows.set(key, list);
    }
  }

  update(values: Iterable<T>): void {
    const checked = checkedElements(values, this.name, 'update');
    const key = this.store.currentKey(this.name);
    if (checked.length === 0) this.rows.delete(key);
    else this.rows.set(key, checked === values ? checked.slice() : (checked as T[]));
  }

  clear(): void {
    this.rows.delete(this.store.currentKey(this.name));
  }
}

export class LmdbMapState<K, V> implements MapState<K, V> {
  constructor(private readonly store: RowStore, private readonly rows: MapRows<K, V>, private readonly name: string) {}

  get(key: K): V | undefined {
    return this.rows.get(this.store.currentKey(this.name), key);
  }

  put(key: K, value: V): void {
    if (value === undefined) rejectNull(value, this.name, `cannot put ${String(key)} →`);
    this.rows.put(this.store.currentKey(this.name), key, value);
  }

  putAll(entries: Iterable<readonly [K, V]> | Map<K, V>): void {
    this.rows.putAll(this.store.currentKey(this.name), checkedEntries(entries, this.name));
  }

  remove(key: K): void {
    this.rows.remove(this.store.currentKey(this.name), key);
  }

  contains(key: K): boolean {
    return this.rows.contains(this.store.currentKey(this.name), key);
  }

  entries(): [K, V][] {
    return this.rows.entries(this.store.currentKey(this.name));
  }

  keys(): K[] {
    return this.entries().map(([key]) => key);
  }

  values(): V[] {
    return this.entries().map(([, value]) => value);
  }

  isEmpty(): boolean {
    return this.rows.isEmpty(this.store.currentKey(this.name));
  }

  clear(): void {
    this.rows.clear(this.store.currentKey(this.name));
  }
}

export class LmdbReducingState<T> implements ReducingState<T> {
  constructor(private readonly store: RowStore, private readonly rows: ValueRows<T>, private readonly descriptor: ReducingStateDescriptor<unknown, T>) {}

  get(): T | undefined {
    return this.rows.get(this.store.currentKey(this.descriptor.name));
  }

  add(value: T): void {
    rejectNull(value, this.descriptor.name, 'cannot add');
    const key = this.store.currentKey(this.descriptor.name);
    const current = this.rows.get(key);
    this.rows.set(key, current === undefined ? value : this.descriptor.reduce(current, value));
  }

  clear(): void {
    this.rows.delete(this.store.currentKey(this.descriptor.name));
  }
}

export class LmdbAggregatingState<IN, ACC, OUT> implements AggregatingState<IN, OUT> {
  constructor(private readonly store: RowStore, private readonly rows: ValueRows<ACC>, private readonly descriptor: AggregatingStateDescriptor<unknown, ACC>) {}

  get(): OUT | undefined {
    const accumulator = this.rows.get(this.store.currentKey(this.descriptor.name));
    return accumulator === undefined ? undefined : (this.descriptor.aggregate.getResult(accumulator) as OUT);
  }

  add(value: IN): void {
    rejectNull(value, this.descriptor.name, 'cannot add');
    const key = this.store.currentKey(this.descriptor.name);
    const aggregate = this.descriptor.aggregate;
    this.rows.set(key, aggregate.add(value, this.rows.get(key) ?? aggregate.createAccumulator()));
  }

  clear(): void {
    this.rows.delete(this.store.currentKey(this.descriptor.name));
  }
}

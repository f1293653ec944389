import { NoKeyedContextError, NullStateValueError } from '../../core/errors';
import type { AggregatingState, Key, ListState, MapState, ReducingState, ValueState } from '../../core/types';
import { copyValue } from '../copyValue';
import type { StateTable } from './stateTable';

/** What a heap state object needs from its backend: the key of the record being processed. */
export interface KeyScope {
  currentKey(stateName: string): Key;
}

export function requireKey(key: Key | undefined, stateName: string): Key {
  if (key === undefined) {
    throw new NoKeyedContextError(
      `state '${stateName}' was used where no key is current; keyed state is only available inside a keyed operator ` +
        '(after keyBy) while it processes a record or a timer',
    );
  }
  return key;
}

function rejectNull(value: unknown, stateName: string, what: string): void {
  if (value === null || value === undefined) {
    throw new NullStateValueError(`state '${stateName}': ${what} ${String(value)}; clear() the state instead of adding nothing`);
  }
}

export class HeapValueState<T> implements ValueState<T> {
  constructor(private readonly scope: KeyScope, private readonly table: StateTable<T>) {}

  value(): T | undefined {
    const key = this.scope.currentKey(this.table.descriptor.name);
    // Reads hand out a private copy while a snapshot is pending, so in-place mutation cannot reach the snapshot.
    const value = this.table.overlays.length === 0 ? this.table.get(key) : this.table.mutable(key);
    if (value !== undefined) return value;
    const fallback = this.table.descriptor.defaultValue;
    return fallback === undefined ? undefined : copyValue(fallback);
  }

  update(value: T | undefined): void {
    const key = this.scope.currentKey(this.table.descriptor.name);
    if (value === undefined) this.table.delete(key);
    else this.table.set(key, value);
  }

  clear(): void {
    this.table.delete(this.scope.currentKey(this.table.descriptor.name));
  }
}

export class HeapListState<T> implements ListState<T> {
  constructor(private readonly scope: KeyScope, private readonly table: StateTable<T[]>) {}

  get(): T[] {
    const list = this.table.get(this.scope.currentKey(this.table.descriptor.name));
    return list === undefined ? [] : list.slice();
  }

  add(value: T): void {
    rejectNull(value, this.table.descriptor.name, 'cannot add');
    const key = this.scope.currentKey(this.table.descriptor.name);
    const list = this.table.mutable(key);
    if (list === undefined) this.table.set(key, [value]);
    else list.push(value);
  }

  addAll(values: Iterable<T>): void {
    for (const value of values) this.add(value);
  }

  update(values: Iterable<T>): void {
    const list = Array.from(values);
    for (const value of list) rejectNull(value, this.table.descriptor.name, 'cannot hold');
    const key = this.scope.currentKey(this.table.descriptor.name);
    if (list.length === 0) this.table.delete(key);
    else this.table.set(key, list);
  }

  clear(): void {
    this.table.delete(this.scope.currentKey(this.table.descriptor.name));
  }
}

export class HeapMapState<K, V> implements MapState<K, V> {
  constructor(private readonly scope: KeyScope, private readonly table: StateTable<Map<K, V>>) {}

  private read(): Map<K, V> | undefined {
    return this.table.get(this.scope.currentKey(this.table.descriptor.name));
  }

  get(key: K): V | undefined {
    return this.read()?.get(key);
  }

  put(key: K, value: V): void {
    if (value === undefined) rejectNull(value, this.table.descriptor.name, `cannot put ${String(key)} →`);
    const stateKey = this.scope.currentKey(this.table.descriptor.name);
    const map = this.table.mutable(stateKey);
    if (map === undefined) this.table.set(stateKey, new Map([[key, value]]));
    else map.set(key, value);
  }

  putAll(entries: Iterable<readonly [K, V]> | Map<K, V>): void {
    for (const [key, value] of entries) this.put(key, value);
  }

  remove(key: K): void {
    const stateKey = this.scope.currentKey(this.table.descriptor.name);
    if (!this.table.get(stateKey)?.has(key)) return;
    const map = this.table.mutable(stateKey)!;
    map.delete(key);
    if (map.size === 0) this.table.delete(stateKey);
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

  clear(): void {
    this.table.delete(this.scope.currentKey(this.table.descriptor.name));
  }
}

export class HeapReducingState<T> implements ReducingState<T> {
  constructor(private readonly scope: KeyScope, private readonly table: StateTable<T>) {}

  get(): T | undefined {
    return this.table.get(this.scope.currentKey(this.table.descriptor.name));
  }

  add(value: T): void {
    rejectNull(value, this.table.descriptor.name, 'cannot add');
    const key = this.scope.currentKey(this.table.descriptor.name);
    const current = this.table.get(key);
    this.table.set(key, current === undefined ? value : this.table.descriptor.reduce!(current, value));
  }

  clear(): void {
    this.table.delete(this.scope.currentKey(this.table.descriptor.name));
  }
}

export class HeapAggregatingState<IN, ACC, OUT> implements AggregatingState<IN, OUT> {
  constructor(private readonly scope: KeyScope, private readonly table: StateTable<ACC>) {}

  get(): OUT | undefined {
    const accumulator = this.table.get(this.scope.currentKey(this.table.descriptor.name));
    return accumulator === undefined ? undefined : (this.table.descriptor.aggregate!.getResult(accumulator) as OUT);
  }

  add(value: IN): void {
    rejectNull(value, this.table.descriptor.name, 'cannot add');
    const key = this.scope.currentKey(this.table.descriptor.name);
    const aggregate = this.table.descriptor.aggregate!;
    // `add` may mutate the accumulator in place (Flink allows it), so take a copy-on-write view of it.
    const accumulator = this.table.mutable(key) ?? aggregate.createAccumulator();
    this.table.set(key, aggregate.add(value, accumulator));
  }

  clear(): void {
    this.table.delete(this.scope.currentKey(this.table.descriptor.name));
  }
}

import type { AggregatingState, AggregateFunction, ListState, MapState, ReducingState, ValueState } from '../../core/types.js';
import { copyValue } from '../copyValue.js';
import { checkedElements, checkedEntries, rejectNull } from '../stateChecks.js';
import { isExpired, type ResolvedTtl } from './ttlConfig.js';
import { RESTAMP, type Stamped } from './ttlDescriptor.js';

/** What a TTL state needs from the layer that made it. */
export interface TtlScope {
  readonly name: string;
  readonly config: ResolvedTtl;
  /** The state's current time (processing or event time, by its configuration). */
  now(): number;
  /** Called after every access: incremental cleanup looks at a few more keys. */
  accessed(): void;
}

/*
 * One class per state kind, each over the backend's state of the same kind holding stamped values (see
 * `storedDescriptor`), reproducing Flink's TTL states: a read drops what expired (and may still return it once, with
 * `return-expired-if-not-cleaned-up`); a write stamps the current time; with `on-read-and-write`, so does a read.
 */

export class TtlValueState<T> implements ValueState<T> {
  constructor(private readonly scope: TtlScope, private readonly stored: ValueState<Stamped<T>>, private readonly defaultValue: T | undefined) {}

  value(): T | undefined {
    const { scope, stored } = this;
    const stamped = stored.value();
    let result: T | undefined;
    if (stamped !== undefined) {
      const now = scope.now();
      if (isExpired(stamped[1], scope.config, now)) {
        stored.clear();
        if (scope.config.returnExpired) result = stamped[0];
      } else {
        result = stamped[0];
        // A value read from state may be changed in place (the backend copied it if a snapshot holds it): so may its time.
        if (scope.config.updateOnRead) {
          stamped[1] = now;
          stored.update(stamped);
        }
      }
    }
    scope.accessed();
    if (result !== undefined) return result;
    return this.defaultValue === undefined ? undefined : copyValue(this.defaultValue);
  }

  /** Incremental cleanup: drops the current key's value if it expired. */
  purge(now: number): void {
    const stamped = this.stored.value();
    if (stamped !== undefined && isExpired(stamped[1], this.scope.config, now)) this.stored.clear();
  }

  update(value: T | undefined): void {
    if (value === undefined) this.stored.clear();
    else this.stored.update([value, this.scope.now()]);
    this.scope.accessed();
  }

  clear(): void {
    this.stored.clear();
    this.scope.accessed();
  }
}

export class TtlListState<T> implements ListState<T> {
  constructor(private readonly scope: TtlScope, private readonly stored: ListState<Stamped<T>>) {}

  get(): T[] {
    const { scope, stored } = this;
    const all = stored.get();
    let visible: Stamped<T>[] = all;
    if (all.length > 0) {
      const now = scope.now();
      const live = all.filter(([, time]) => !isExpired(time, scope.config, now));
      if (scope.config.updateOnRead) stored.update(live.map(([value]) => [value, now] as Stamped<T>));
      else if (live.length < all.length) stored.update(live);
      if (!scope.config.returnExpired) visible = live;
    }
    scope.accessed();
    return visible.map(([value]) => value);
  }

  purge(now: number): void {
    const all = this.stored.get();
    const live = all.filter(([, time]) => !isExpired(time, this.scope.config, now));
    if (live.length < all.length) this.stored.update(live);
  }

  add(value: T): void {
    rejectNull(value, this.scope.name, 'cannot add');
    this.stored.add([value, this.scope.now()]);
    this.scope.accessed();
  }

  addAll(values: Iterable<T>): void {
    this.stored.addAll(this.stamped(values, 'addAll'));
    this.scope.accessed();
  }

  update(values: Iterable<T>): void {
    this.stored.update(this.stamped(values, 'update'));
    this.scope.accessed();
  }

  /** The values, all checked before the backend sees any (so a rejected call writes nothing), stamped now. */
  private stamped(values: Iterable<T>, call: string): Stamped<T>[] {
    const now = this.scope.now();
    return checkedElements(values, this.scope.name, call).map((value): Stamped<T> => [value, now]);
  }

  clear(): void {
    this.stored.clear();
    this.scope.accessed();
  }
}

export class TtlMapState<K, V> implements MapState<K, V> {
  constructor(private readonly scope: TtlScope, private readonly stored: MapState<K, Stamped<V>>) {}

  /** The entry of `key` after the TTL check: undefined when absent, or expired and not to be returned. */
  private entry(key: K): Stamped<V> | undefined {
    const { scope, stored } = this;
    const stamped = stored.get(key);
    if (stamped === undefined) return undefined;
    const now = scope.now();
    if (isExpired(stamped[1], scope.config, now)) {
      stored.remove(key);
      return scope.config.returnExpired ? stamped : undefined;
    }
    if (scope.config.updateOnRead) stored.put(key, [stamped[0], now]);
    return stamped;
  }

  purge(now: number): void {
    for (const [key, [, time]] of this.stored.entries()) if (isExpired(time, this.scope.config, now)) this.stored.remove(key);
  }

  get(key: K): V | undefined {
    const stamped = this.entry(key);
    this.scope.accessed();
    return stamped?.[0];
  }

  put(key: K, value: V): void {
    if (value === undefined) rejectNull(value, this.scope.name, `cannot put ${String(key)} →`);
    this.stored.put(key, [value, this.scope.now()]);
    this.scope.accessed();
  }

  putAll(entries: Iterable<readonly [K, V]> | Map<K, V>): void {
    const now = this.scope.now();
    const stamped = Array.from(checkedEntries(entries, this.scope.name), ([key, value]): [K, Stamped<V>] => [key, [value, now]]);
    this.stored.putAll(stamped);
    this.scope.accessed();
  }

  remove(key: K): void {
    this.stored.remove(key);
    this.scope.accessed();
  }

  contains(key: K): boolean {
    const found = this.entry(key) !== undefined;
    this.scope.accessed();
    return found;
  }

  entries(): [K, V][] {
    const { scope, stored } = this;
    const entries: [K, V][] = [];
    const now = scope.now();
    for (const [key, [value, time]] of stored.entries()) {
      if (isExpired(time, scope.config, now)) {
        stored.remove(key);
        if (!scope.config.returnExpired) continue;
      } else if (scope.config.updateOnRead) stored.put(key, [value, now]);
      entries.push([key, value]);
    }
    scope.accessed();
    return entries;
  }

  keys(): K[] {
    return this.entries().map(([key]) => key);
  }

  values(): V[] {
    return this.entries().map(([, value]) => value);
  }

  isEmpty(): boolean {
    return this.entries().length === 0;
  }

  clear(): void {
    this.stored.clear();
    this.scope.accessed();
  }
}

/** Reads a stamped reducing or aggregating value: drops it when expired, restamps it on read if configured. */
function readStamped<T>(scope: TtlScope, stamped: Stamped<T> | undefined, clear: () => void, restamp: () => void): T | undefined {
  let result: T | undefined;
  if (stamped !== undefined) {
    if (isExpired(stamped[1], scope.config, scope.now())) {
      clear();
      if (scope.config.returnExpired) result = stamped[0];
    } else {
      result = stamped[0];
      if (scope.config.updateOnRead) restamp();
    }
  }
  scope.accessed();
  return result;
}

export class TtlReducingState<T> implements ReducingState<T> {
  constructor(private readonly scope: TtlScope, private readonly stored: ReducingState<Stamped<T> | typeof RESTAMP>) {}

  get(): T | undefined {
    const { stored } = this;
    return readStamped(this.scope, stored.get() as Stamped<T> | undefined, () => stored.clear(), () => stored.add(RESTAMP));
  }

  purge(now: number): void {
    const stamped = this.stored.get() as Stamped<T> | undefined;
    if (stamped !== undefined && isExpired(stamped[1], this.scope.config, now)) this.stored.clear();
  }

  /** The stored reduce function drops an expired value before reducing (see `storedDescriptor`). */
  add(value: T): void {
    rejectNull(value, this.scope.name, 'cannot add');
    this.stored.add([value, this.scope.now()]);
    this.scope.accessed();
  }

  clear(): void {
    this.stored.clear();
    this.scope.accessed();
  }
}

export class TtlAggregatingState<IN, OUT> implements AggregatingState<IN, OUT> {
  constructor(
    private readonly scope: TtlScope,
    /** Its `get` returns the stamped accumulator (see `storedDescriptor`). */
    private readonly stored: AggregatingState<IN | typeof RESTAMP, Stamped<unknown>>,
    private readonly aggregate: AggregateFunction<IN, unknown, OUT>,
  ) {}

  get(): OUT | undefined {
    const { stored } = this;
    const accumulator = readStamped(this.scope, stored.get(), () => stored.clear(), () => stored.add(RESTAMP));
    return accumulator === undefined ? undefined : this.aggregate.getResult(accumulator);
  }

  purge(now: number): void {
    const stamped = this.stored.get();
    if (stamped !== undefined && isExpired(stamped[1], this.scope.config, now)) this.stored.clear();
  }

  add(value: IN): void {
    rejectNull(value, this.scope.name, 'cannot add');
    this.stored.add(value);
    this.scope.accessed();
  }

  clear(): void {
    this.stored.clear();
    this.scope.accessed();
  }
}

import type { Key } from '../../core/types.js';

/**
 * A `Map` of state keys that splits itself, once it is large, into shards chosen by a cheap function of the key
 * (`shardOf`), and iterates shard by shard. Why: one `Map` of 10⁶ entries is a hash table far out of the CPU caches,
 * rehashed whole each time it doubles; inserting 10⁶ keys into it cost ~3× per key what 10⁴ did, while inserting
 * them shard by shard into 128 maps, each small enough to stay in cache, cost ~1.2× (main-thread CPU, one process,
 * a loaded 2-core machine). Snapshots iterate the shards in order, so a restore of them inserts shard by shard.
 *
 * The shard is not the key group: hashing every key (MurmurHash3) on every state access cost more than the lookup
 * itself, where `shardOf` reads four characters. A table of keys alike in those characters ends up in one shard,
 * which is what a single `Map` does anyway. Small tables (a window's, most operators') stay one `Map`.
 */
export class ShardedMap<K extends Key, V> {
  /** All entries while the map is small; undefined once split. */
  private one: Map<K, V> | undefined = new Map<K, V>();
  /** The shards once split (`SHARDS` of them). */
  private shards: Map<K, V>[] = [];
  private count = 0;

  get size(): number {
    return this.one === undefined ? this.count : this.one.size;
  }

  get(key: K): V | undefined {
    const { one } = this;
    return one !== undefined ? one.get(key) : this.shards[shardOf(key)]!.get(key);
  }

  has(key: K): boolean {
    const { one } = this;
    return one !== undefined ? one.has(key) : this.shards[shardOf(key)]!.has(key);
  }

  set(key: K, value: V): this {
    const { one } = this;
    if (one !== undefined) {
      one.set(key, value);
      if (one.size >= SPLIT_AT) this.split(one);
      return this;
    }
    const shard = this.shards[shardOf(key)]!;
    const size = shard.size;
    shard.set(key, value);
    this.count += shard.size - size;
    return this;
  }

  delete(key: K): boolean {
    const { one } = this;
    if (one !== undefined) return one.delete(key);
    const deleted = this.shards[shardOf(key)]!.delete(key);
    if (deleted) this.count--;
    return deleted;
  }

  /**
   * Makes room for `entries` more (a restore, which knows how many it inserts): an empty map that will be large is
   * split now, so that its entries are not put in one map and moved to the shards later.
   */
  reserve(entries: number): void {
    const { one } = this;
    if (one !== undefined && one.size === 0 && entries >= SPLIT_AT) this.split(one);
  }

  /** Every key, shard by shard (each shard in insertion order), as a new array. */
  keyList(): K[] {
    if (this.one !== undefined) return [...this.one.keys()];
    const keys = new Array<K>(this.count);
    let at = 0;
    for (const shard of this.shards) for (const key of shard.keys()) keys[at++] = key;
    return keys;
  }

  /** Every value, in the order of `keyList`, as a new array. */
  valueList(): V[] {
    if (this.one !== undefined) return [...this.one.values()];
    const values = new Array<V>(this.count);
    let at = 0;
    for (const shard of this.shards) for (const value of shard.values()) values[at++] = value;
    return values;
  }

  *keys(): IterableIterator<K> {
    if (this.one !== undefined) yield* this.one.keys();
    else for (const shard of this.shards) yield* shard.keys();
  }

  /** Moves the entries of the single map into shards, once: the table has grown past what stays in cache. */
  private split(one: Map<K, V>): void {
    const shards: Map<K, V>[] = [];
    for (let i = 0; i < SHARDS; i++) shards.push(new Map<K, V>());
    one.forEach((value, key) => shards[shardOf(key)]!.set(key, value));
    this.shards = shards;
    this.count = one.size;
    this.one = undefined;
  }
}

/** Shards of a split map: ~8k entries each at 10⁶ keys, whose hash table (~200 kB) fits a core's L2 cache. */
const SHARD_BITS = 7;
const SHARDS = 1 << SHARD_BITS;

/**
 * Size at which a map splits. Below it, one `Map` mostly stays in cache, and its keys are looked up without reading
 * their characters: split at 8192, a keyed reduce over 10⁴ keys ran ~20% slower (2.0M against 2.5M events/s).
 */
const SPLIT_AT = 65_536;

/**
 * The shard of a key: a string by its length and four of its characters (its last three, which tell ids with a
 * counter or random suffix apart, and its middle one), a number by its low bits. Any function of the key would be
 * correct; this one is cheap enough for every state access and spreads the usual keys (`user-123`, UUIDs) evenly.
 */
function shardOf(key: Key): number {
  if (typeof key === 'string') {
    const n = key.length;
    if (n < 3) return n === 0 ? 0 : (key.charCodeAt(0) + key.charCodeAt(n - 1)) & (SHARDS - 1);
    const mixed = key.charCodeAt(n - 1) ^ (key.charCodeAt(n - 2) << 8) ^ (key.charCodeAt(n - 3) << 16) ^ (key.charCodeAt(n >> 1) << 24) ^ n;
    return Math.imul(mixed, 0x9e3779b1) >>> (32 - SHARD_BITS);
  }
  if (typeof key === 'number') return (key | 0) & (SHARDS - 1);
  return 0;
}

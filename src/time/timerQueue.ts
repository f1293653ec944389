import type { Key } from '../core/types.js';

/**
 * Pending timers of one time domain: at most one per (time, namespace, key), as Flink deduplicates timers. Timers
 * are grouped by time because windows make many keys share few times (every key's window ends at the same
 * instant), so the min-heap holds distinct times only and firing a time visits its keys in one sweep.
 */
export class TimerQueue {
  private readonly byTime = new Map<number, Map<string, Set<Key>>>();
  /** Distinct times, as a binary min-heap; may hold times whose timers were all deleted (skipped on peek). */
  private readonly heap: number[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /**
   * The key set `add` used last, with its time and namespace: windows make consecutive records register timers at
   * the same time and namespace (often twice per record: the trigger's and the cleanup's), so this skips two of
   * the three map lookups. Forgotten whenever a set may leave the maps.
   */
  private lastTime = Number.NaN;
  private lastNamespace: string | undefined;
  private lastKeys: Set<Key> | undefined;

  add(time: number, namespace: string, key: Key): void {
    let keys: Set<Key> | undefined;
    if (time === this.lastTime && namespace === this.lastNamespace) keys = this.lastKeys!;
    else {
      let namespaces = this.byTime.get(time);
      if (namespaces === undefined) {
        this.byTime.set(time, (namespaces = new Map<string, Set<Key>>()));
        this.push(time);
      }
      keys = namespaces.get(namespace);
      if (keys === undefined) namespaces.set(namespace, (keys = new Set()));
      this.lastTime = time;
      this.lastNamespace = namespace;
      this.lastKeys = keys;
    }
    const size = keys.size;
    keys.add(key);
    if (keys.size !== size) this.count++;
  }

  delete(time: number, namespace: string, key: Key): void {
    const namespaces = this.byTime.get(time);
    const keys = namespaces?.get(namespace);
    if (!keys?.delete(key)) return;
    this.count--;
    if (keys.size === 0) {
      namespaces!.delete(namespace);
      if (keys === this.lastKeys) this.forgetLast();
    }
    if (namespaces!.size === 0) this.byTime.delete(time);
  }

  private forgetLast(): void {
    this.lastTime = Number.NaN;
    this.lastNamespace = undefined;
    this.lastKeys = undefined;
  }

  /** The earliest pending time, or undefined. */
  peek(): number | undefined {
    while (this.heap.length > 0 && !this.byTime.has(this.heap[0]!)) this.pop();
    return this.heap[0];
  }

  /**
   * Removes and returns every timer of the earliest time, as a map of namespace to keys. It is detached from the
   * queue: timers added or deleted while the caller fires these do not change it.
   */
  takeEarliest(): { time: number; timers: ReadonlyMap<string, ReadonlySet<Key>> } | undefined {
    const time = this.peek();
    if (time === undefined) return undefined;
    const namespaces = this.byTime.get(time)!;
    this.byTime.delete(time);
    if (time === this.lastTime) this.forgetLast();
    this.pop();
    for (const keys of namespaces.values()) this.count -= keys.size;
    return { time, timers: namespaces };
  }

  forEach(visit: (time: number, namespace: string, key: Key) => void): void {
    for (const [time, namespaces] of this.byTime) for (const [namespace, keys] of namespaces) for (const key of keys) visit(time, namespace, key);
  }

  private push(time: number): void {
    const heap = this.heap;
    heap.push(time);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]! <= time) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = time;
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && heap[right]! < heap[left]! ? right : left;
      if (heap[child]! >= last) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
}

// A CheckpointStorage wrapper that injects failures into the calls of the storage it wraps, for the storage fault
// tests (test/faults/storageFaults.test.ts). Faults are armed one at a time and fire on the next matching call.
import type { CheckpointStorage } from 'weir';

export type Fault =
  /** The write rejects with an I/O error; nothing is written. */
  | { kind: 'write-error' }
  /** The write rejects with ENOSPC, as a full disk does; nothing is written. */
  | { kind: 'enospc' }
  /** A broken storage: the first `keep` bytes land under the final name, then the write rejects. */
  | { kind: 'torn'; keep: number }
  /** The write waits until `releaseHeld()`, then succeeds: slower than anything the test waits for. */
  | { kind: 'held' }
  /** The read rejects with an I/O error. */
  | { kind: 'read-error' }
  /** The read returns the bytes with one bit flipped. */
  | { kind: 'bit-flip' };

interface Armed {
  fault: Fault;
  match: (path: string) => boolean;
  times: number;
}

export interface FaultyStorage extends CheckpointStorage {
  /** Arms a fault for the next `times` (default 1) calls whose path matches. */
  inject(fault: Fault, match: (path: string) => boolean, times?: number): void;
  /** Disarms every fault. */
  heal(): void;
  /** Faults that fired, as `<kind> <path>`. */
  readonly fired: string[];
  /** Resolves with the path of the next held write once it has started (it then waits for `releaseHeld`). */
  held(): Promise<string>;
  /** Lets every held write go on. */
  releaseHeld(): void;
  /** Resolves when the next `remove` of a matching path, called after this call, has finished. */
  nextRemove(match: (path: string) => boolean): Promise<void>;
  /** Resolves when every held write has finished. */
  settled(): Promise<void>;
}

function ioError(code: string, message: string): Error {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}

/**
 * Wraps `inner`, keeping its location, limits and lock.
 * @example const storage = faultyStorage(fsCheckpointStorage(dir)); storage.inject({ kind: 'enospc' }, (p) => p.endsWith('/_metadata'));
 */
export function faultyStorage(inner: CheckpointStorage): FaultyStorage {
  let armed: Armed[] = [];
  const fired: string[] = [];
  const inFlight = new Set<Promise<unknown>>();
  // Held writes wait for `release`; `heldWaiters` are the `held()` calls waiting for the next one to start.
  let release!: () => void;
  let released = new Promise<void>((resolve) => (release = resolve));
  const heldWaiters: ((path: string) => void)[] = [];
  let removeWaiters: { match: (path: string) => boolean; resolve: () => void }[] = [];
  const take = (path: string, kinds: Fault['kind'][]): Fault | undefined => {
    const entry = armed.find((a) => kinds.includes(a.fault.kind) && a.match(path));
    if (!entry) return undefined;
    if (--entry.times <= 0) armed = armed.filter((a) => a !== entry);
    fired.push(`${entry.fault.kind} ${path}`);
    return entry.fault;
  };
  return {
    ...inner,
    fired,
    inject(fault, match, times = 1) {
      armed.push({ fault, match, times });
    },
    heal() {
      armed = [];
    },
    held: () => new Promise<string>((resolve) => heldWaiters.push(resolve)),
    releaseHeld() {
      release();
      released = new Promise<void>((resolve) => (release = resolve));
    },
    nextRemove: (match) => new Promise<void>((resolve) => removeWaiters.push({ match, resolve })),
    async settled() {
      await Promise.all(inFlight);
    },
    async write(path, data) {
      const fault = take(path, ['write-error', 'enospc', 'torn', 'held']);
      switch (fault?.kind) {
        case 'write-error':
          throw ioError('EIO', `i/o error writing ${path}`);
        case 'enospc':
          throw ioError('ENOSPC', `no space left on device, write ${path}`);
        case 'torn':
          await inner.write(path, data.subarray(0, Math.min(fault.keep, data.length)));
          throw ioError('EIO', `i/o error writing ${path} after ${fault.keep} bytes`);
        case 'held': {
          const write = released.then(() => inner.write(path, data));
          inFlight.add(write);
          heldWaiters.splice(0).forEach((resolve) => resolve(path));
          return write.finally(() => inFlight.delete(write));
        }
        default:
          return inner.write(path, data);
      }
    },
    async read(path) {
      const fault = take(path, ['read-error', 'bit-flip']);
      if (fault?.kind === 'read-error') throw ioError('EIO', `i/o error reading ${path}`);
      const bytes = await inner.read(path);
      if (fault?.kind === 'bit-flip') {
        const copy = bytes.slice();
        copy[copy.length - 1] = copy[copy.length - 1]! ^ 0x01;
        return copy;
      }
      return bytes;
    },
    list: (dir) => inner.list(dir),
    async remove(path) {
      const waiting = removeWaiters.filter((waiter) => waiter.match(path));
      removeWaiters = removeWaiters.filter((waiter) => !waiting.includes(waiter));
      try {
        await inner.remove(path);
      } finally {
        waiting.forEach((waiter) => waiter.resolve());
      }
    },
  };
}

/** A storage whose every write of a path matching `failing` throws a disk-full error (ENOSPC), for good. */
export function failingWritesOf(storage: CheckpointStorage, failing: RegExp): CheckpointStorage {
  return {
    ...storage,
    async write(path, data) {
      if (failing.test(path)) throw new Error(`ENOSPC: no space left on device, write '${path}'`);
      return storage.write(path, data);
    },
  };
}

import { createStore, get, promisifyRequest, set } from 'idb-keyval';
import superjson from 'superjson';
import { CheckpointCorruptedError, CheckpointNotFoundError, JobDefinitionError, StorageQuotaExceededError } from '../core/errors.js';
import type { CheckpointStorage } from '../core/types.js';
import { directoryPrefix, normalizePath } from './storagePaths.js';

/** The one object store of a weir database: file paths as keys, file contents (a `Blob`, or a small file's bytes) as values. */
const STORE = 'files';

/**
 * Files up to this size are stored as a `Uint8Array` instead of a `Blob`: Chromium registers every blob with its
 * blob registry and writes it to a file of its own, which for `_metadata` (under 1 KB, written last, so on every
 * checkpoint's critical path) took 2.2–7.1 ms per `put` against 0.8–3.4 ms for the bytes, alternating in one page on
 * a loaded machine. It is also where Chromium itself starts moving large values out of its database (64 KiB).
 */
const INLINE_BYTES = 64 * 1024;

/** A file as it is stored: small ones as their own bytes (a copy, so that a view does not take its whole buffer along). */
function fileRecord(data: Uint8Array): Blob | Uint8Array {
  // The engine's bytes are never over a SharedArrayBuffer, which a Blob cannot take.
  return data.byteLength <= INLINE_BYTES ? data.slice() : new Blob([data as Uint8Array<ArrayBuffer>]);
}

/**
 * Checkpoint storage in the browser's IndexedDB, in a database of its own (`dbName`) with one object store keyed by
 * path: the same `<job>/chk-<id>/…` layout as the file system storage, so the inspector reads both. Each file is one
 * value (a `Blob`; a small file's bytes) written by one `put` in one transaction: an operator's state costs one IndexedDB write, however
 * many keys it holds, and IndexedDB commits the whole file or none of it, so `_metadata` (written last) is the atomic
 * commit point of a checkpoint. A `Blob` rather than the `Uint8Array` itself because Chromium writes a blob's bytes
 * to a file of its own instead of cloning them into its database: a 3.4 MB state file takes ~5 ms instead of ~12.
 * Files up to `INLINE_BYTES` (`_metadata`, a source's offsets) are stored as bytes, which a blob costs more than it
 * saves on.
 * Checkpoints (not savepoints) keep rich state values (Map, Set, Date, BigInt) beside the bytes, where IndexedDB's
 * structured clone stores them faster than superjson encodes them (`writeStructured`).
 * A full quota rejects with `StorageQuotaExceededError` and leaves every earlier checkpoint as it was. Paths may also be given as `describe` returns them (`indexeddb://<dbName>/<path>`), so
 * `job.start({ restore: stats.path })` works.
 * @example
 * import { createJob, indexedDbCheckpointStorage } from 'weir/browser';
 * const job = createJob({ name: 'clicks', checkpoints: { storage: indexedDbCheckpointStorage({ dbName: 'weir-clicks' }), interval: 1_000 } });
 */
export function indexedDbCheckpointStorage({ dbName }: { dbName: string }): CheckpointStorage {
  if (typeof dbName !== 'string' || dbName === '') {
    throw new JobDefinitionError(`indexedDbCheckpointStorage: dbName must be a non-empty string, got ${String(dbName)}`);
  }
  if (typeof indexedDB === 'undefined') {
    throw new JobDefinitionError(
      `indexedDbCheckpointStorage('${dbName}'): IndexedDB is not available here; in Node use fsCheckpointStorage from 'weir/node'`,
    );
  }
  const files = createStore(dbName, STORE);
  const location = `indexeddb://${dbName}`;
  const keyOf = (path: string) => normalizePath(path.startsWith(`${location}/`) ? path.slice(location.length + 1) : path);
  const describe = (path: string) => `${location}/${keyOf(path)}`;

  /** Puts one record in one transaction; a full quota becomes `StorageQuotaExceededError`. */
  const put = async (path: string, record: Blob | Uint8Array | StructuredRecord, size: number): Promise<void> => {
    try {
      await set(keyOf(path), record, files);
    } catch (error) {
      if (isQuotaError(error)) {
        throw new StorageQuotaExceededError(
          `${describe(path)}: the browser's storage quota is exhausted (writing ${size} bytes); nothing of this write was kept ` +
            `and earlier checkpoints are intact. Free space for this site, keep fewer checkpoints (retain) or ask for more with navigator.storage.persist()`,
          { cause: error },
        );
      }
      throw error;
    }
  };

  /** A file's bytes and the values kept beside them, from whichever form it was stored in. */
  const readRecord = async (path: string): Promise<{ data: Uint8Array; values: readonly unknown[] }> => {
    const record: unknown = await get(keyOf(path), files);
    if (record === undefined) throw new CheckpointNotFoundError(`checkpoint file ${describe(path)} does not exist`);
    if (record instanceof Blob) return { data: await bytesOf(record, describe(path)), values: [] };
    // Small files, and files written before they were stored as blobs; every `get` is a fresh structured clone,
    // which the caller owns.
    if (record instanceof Uint8Array) return { data: record, values: [] };
    if (isStructuredRecord(record)) {
      const values = record.encoding === 'superjson' ? record.values.map((value) => superjson.parse(value as string)) : record.values;
      return { data: await bytesOf(record.data, describe(path)), values };
    }
    throw new CheckpointCorruptedError(`${describe(path)}: holds a ${typeof record} instead of file bytes; it was not written by weir — restore from another checkpoint`);
  };

  return {
    location,
    // A put clones its value (a Blob or bytes) when it is called.
    releasesWrittenData: true,
    write: (path, data) => put(path, fileRecord(data), data.byteLength),
    async writeStructured(path, data, values) {
      const blob = new Blob([data as Uint8Array<ArrayBuffer>]);
      try {
        await put(path, { data: blob, values: [...values] }, data.byteLength);
      } catch (error) {
        // A value structured clone refuses (a function, a symbol inside it): the values go as superjson instead,
        // which keeps what a storage without structured values would keep of them.
        if ((error as { name?: unknown } | null)?.name !== 'DataCloneError') throw error;
        await put(path, { data: blob, values: values.map((value) => superjson.stringify(value)), encoding: 'superjson' }, data.byteLength);
      }
    },
    read: async (path) => (await readRecord(path)).data,
    readStructured: readRecord,
    list(dir) {
      const prefix = directoryPrefix(keyOf(dir));
      return files('readonly', (store) => childrenOf(store, prefix));
    },
    remove(path) {
      const key = keyOf(path);
      return files('readwrite', (store) => {
        // One transaction: a directory goes whole or not at all.
        if (key === '') store.clear();
        else {
          store.delete(key);
          store.delete(under(`${key}/`));
        }
        return promisifyRequest(store.transaction);
      });
    },
    describe,
  };
}

/**
 * The names directly under `prefix`, read with a key cursor that jumps over each subdirectory once it has seen it
 * (`continue` to the first key past it): cost grows with the number of children, not with the files beneath them.
 */
function childrenOf(store: IDBObjectStore, prefix: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const children = new Set<string>();
    const request = store.openKeyCursor(prefix === '' ? null : under(prefix));
    request.onerror = () => reject(request.error ?? new Error(`IndexedDB: listing '${prefix}' failed`));
    request.onsuccess = () => {
      const cursor = request.result;
      if (!cursor) {
        resolve([...children].sort());
        return;
      }
      if (typeof cursor.key !== 'string') {
        cursor.continue();
        return;
      }
      const rest = cursor.key.slice(prefix.length);
      const slash = rest.indexOf('/');
      const child = slash < 0 ? rest : rest.slice(0, slash);
      children.add(child);
      if (slash < 0) cursor.continue();
      else cursor.continue(nextAfter(`${prefix}${child}/`));
    };
  });
}

/** Every string key that starts with `prefix` (which ends in `/`): `[prefix, nextAfter(prefix))`. */
function under(prefix: string): IDBKeyRange {
  return IDBKeyRange.bound(prefix, nextAfter(prefix), false, true);
}

/** The smallest string greater than every string starting with `prefix`, which ends in `/`: `/` is followed by `0`. */
function nextAfter(prefix: string): string {
  return `${prefix.slice(0, -1)}0`;
}

/** A file written by `writeStructured`: its bytes, and the values kept beside them (as superjson text where IndexedDB could not clone them). */
interface StructuredRecord {
  data: Blob;
  values: unknown[];
  encoding?: 'superjson';
}

function isStructuredRecord(record: unknown): record is StructuredRecord {
  const { data, values } = record as Partial<StructuredRecord>;
  return typeof record === 'object' && record !== null && data instanceof Blob && Array.isArray(values);
}

async function bytesOf(blob: Blob, where: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(await blob.arrayBuffer());
  } catch (error) {
    // The browser lost the file behind the blob (cleared site data, a damaged profile).
    throw new CheckpointCorruptedError(`${where}: the browser cannot read its bytes back (${(error as Error).message}) — restore from another checkpoint`, { cause: error });
  }
}

/** IndexedDB aborts the transaction with a `QuotaExceededError` DOMException when the origin's quota is full. */
function isQuotaError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'QuotaExceededError';
}

import { createStore, get, promisifyRequest, set } from 'idb-keyval';
import { CheckpointCorruptedError, CheckpointNotFoundError, JobDefinitionError, StorageQuotaExceededError } from '../core/errors';
import type { CheckpointStorage } from '../core/types';
import { directoryPrefix, normalizePath } from '../storage/storagePaths';

/** The one object store of a weir database: file paths as keys, file contents (a `Blob` each) as values. */
const STORE = 'files';

/**
 * Checkpoint storage in the browser's IndexedDB, in a database of its own (`dbName`) with one object store keyed by
 * path: the same `<job>/chk-<id>/…` layout as the file system storage, so the inspector reads both. Each file is one
 * `Blob` value written by one `put` in one transaction: an operator's state costs one IndexedDB write, however
 * many keys it holds, and IndexedDB commits the whole file or none of it, so `_metadata` (written last) is the atomic
 * commit point of a checkpoint. A `Blob` rather than the `Uint8Array` itself because Chromium writes a blob's bytes
 * to a file of its own instead of cloning them into its database: a 3.4 MB state file takes ~5 ms instead of ~12.
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

  return {
    location,
    async write(path, data) {
      try {
        // The engine's bytes are never over a SharedArrayBuffer, which a Blob cannot take.
        await set(keyOf(path), new Blob([data as Uint8Array<ArrayBuffer>]), files);
      } catch (error) {
        if (isQuotaError(error)) {
          throw new StorageQuotaExceededError(
            `${describe(path)}: the browser's storage quota is exhausted (writing ${data.byteLength} bytes); nothing of this write was kept ` +
              `and earlier checkpoints are intact. Free space for this site, keep fewer checkpoints (retain) or ask for more with navigator.storage.persist()`,
            { cause: error },
          );
        }
        throw error;
      }
    },
    async read(path) {
      const data: unknown = await get(keyOf(path), files);
      if (data === undefined) throw new CheckpointNotFoundError(`checkpoint file ${describe(path)} does not exist`);
      if (data instanceof Blob) {
        try {
          return new Uint8Array(await data.arrayBuffer());
        } catch (error) {
          // The browser lost the file behind the blob (cleared site data, a damaged profile).
          throw new CheckpointCorruptedError(`${describe(path)}: the browser cannot read its bytes back (${(error as Error).message}) — restore from another checkpoint`, { cause: error });
        }
      }
      // Files written before they were stored as blobs; every `get` is a fresh structured clone, which the caller owns.
      if (data instanceof Uint8Array) return data;
      throw new CheckpointCorruptedError(`${describe(path)}: holds a ${typeof data} instead of file bytes; it was not written by weir — restore from another checkpoint`);
    },
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
    request.onerror = () => reject(request.error);
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

/** IndexedDB aborts the transaction with a `QuotaExceededError` DOMException when the origin's quota is full. */
function isQuotaError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'QuotaExceededError';
}

import { CheckpointNotFoundError } from '../core/errors.js';
import type { CheckpointStorage } from '../core/types.js';
import type { StorageOp, WireError } from './workerProtocol.js';
import { fromWireError } from './workerProtocol.js';

/**
 * Sends one storage call to the thread that holds the storage; settles with its answer. With `take`, a write's
 * buffer is transferred there and comes back as the answer.
 */
export type StorageRequest = (op: StorageOp, path: string, data?: Uint8Array, take?: boolean) => Promise<unknown>;

/**
 * A checkpoint storage in a worker thread that is the main thread's storage: every call is a message there, and the
 * main thread calls the real storage. So every storage works from a worker (memory and IndexedDB too, which live in
 * one thread), and the job's lock and `_metadata` stay on the main thread.
 */
export function remoteStorage(location: string, maxStateSize: number | undefined, request: StorageRequest): CheckpointStorage {
  return {
    location,
    ...(maxStateSize !== undefined ? { maxStateSize } : {}),
    // postMessage clones the bytes (nothing is transferred).
    releasesWrittenData: true,
    write: async (path, data) => {
      await request('write', path, data);
    },
    writeTaking: async (path, data) => (await request('write', path, data, true)) as Uint8Array,
    read: async (path) => (await request('read', path)) as Uint8Array,
    list: async (dir) => (await request('list', dir)) as string[],
    remove: async (path) => {
      await request('remove', path);
    },
  };
}

/** The error a storage call failed with, as the worker's caller expects it: a missing file stays a CheckpointNotFoundError. */
export function storageError(wire: WireError): Error {
  return wire.name === 'CheckpointNotFoundError' ? new CheckpointNotFoundError(wire.message) : fromWireError(wire);
}

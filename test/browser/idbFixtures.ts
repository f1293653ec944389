import type { CheckpointStorage } from 'weir';
import { indexedDbCheckpointStorage } from 'weir/browser';

/** A database name no other test uses, so tests need not delete databases (an open connection would block that). */
export function freshDbName(): string {
  return `weir-test-${crypto.randomUUID()}`;
}

/** Chromium's Storage Buckets API, not yet in TypeScript's DOM types. */
interface StorageBuckets {
  open(name: string, options: { quota: number }): Promise<{ indexedDB: IDBFactory }>;
}

/**
 * An IndexedDB checkpoint storage in a storage bucket of its own with a quota of `quota` bytes, so Chromium fails
 * writes past it with a real `QuotaExceededError`, as a full disk would. (Lowering the page's quota through the
 * DevTools protocol does not work: Chromium reads it once, when the origin first uses IndexedDB.)
 */
export async function storageWithQuota(quota: number): Promise<CheckpointStorage> {
  const buckets = (navigator as Navigator & { storageBuckets: StorageBuckets }).storageBuckets;
  const bucket = await buckets.open(`quota-${crypto.randomUUID()}`, { quota });
  // idb-keyval opens its database through the global `indexedDB`, once, on first use: point that at the bucket for
  // this one open, then put the page's own back.
  const pageIndexedDB = Object.getOwnPropertyDescriptor(globalThis, 'indexedDB')!;
  Object.defineProperty(globalThis, 'indexedDB', { value: bucket.indexedDB, configurable: true, writable: true });
  try {
    const storage = indexedDbCheckpointStorage({ dbName: 'weir' });
    await storage.list('');
    return storage;
  } finally {
    Object.defineProperty(globalThis, 'indexedDB', pageIndexedDB);
  }
}

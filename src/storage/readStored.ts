import type { CheckpointStorage } from '../core/types.js';

/**
 * A file's bytes and the values its storage keeps beside them (`readStructured`, see `setAsideValues`); storages
 * without structured values give none. Whatever decodes a state file reads it through here.
 */
export async function readStored(storage: CheckpointStorage, path: string): Promise<{ data: Uint8Array; values: readonly unknown[] }> {
  return storage.readStructured ? storage.readStructured(path) : { data: await storage.read(path), values: [] };
}

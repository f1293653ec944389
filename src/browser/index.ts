// weir for browsers: everything in 'weir'; browser-only storages (IndexedDB) join here.
export * from '../index.js';
export { indexedDbCheckpointStorage } from '../storage/indexedDbCheckpointStorage.js';

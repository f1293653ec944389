// weir for browsers: everything in 'weir'; browser-only storages (IndexedDB) join here.
export * from '../index';
export { indexedDbCheckpointStorage } from './indexedDbCheckpointStorage';

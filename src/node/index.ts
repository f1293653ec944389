export { fsCheckpointStorage } from './fsCheckpointStorage';
export { fromFile } from './fromFile';
export { toFile, fileSink } from './toFile';
export { lmdbStateBackend, type LmdbStateBackendOptions } from './lmdb/lmdbStateBackend';
export { serveQueryableState, type QueryableStateServer, type QueryableStateServerOptions } from './queryableStateServer';

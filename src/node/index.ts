export { fsCheckpointStorage } from '../storage/fsCheckpointStorage.js';
export { fromFile } from './fromFile.js';
export { toFile, fileSink } from './toFile.js';
export { lmdbStateBackend, type LmdbStateBackendOptions } from '../state/lmdb/lmdbStateBackend.js';
export { serveQueryableState, type QueryableStateServer, type QueryableStateServerOptions } from './queryableStateServer.js';
export { startJob, type StartJobOptions, type JobDefinition, type JobModuleContext } from './startJob.js';
export { liveJobWorkers } from './nodeWorkerHost.js';

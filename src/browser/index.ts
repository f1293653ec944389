// weir for browsers: everything in 'weir'; browser-only storages (IndexedDB) join here.
export * from '../index.js';
export { indexedDbCheckpointStorage } from '../storage/indexedDbCheckpointStorage.js';
export { startJob, type BrowserStartJobOptions } from './startJob.js';
export { runJobWorker } from './runJobWorker.js';
export type { WorkerFactory } from './browserWorkerHost.js';
export type { JobDefinition, JobModuleContext } from '../runtime/jobModule.js';

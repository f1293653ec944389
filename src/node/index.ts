export { fsCheckpointStorage } from '../storage/fsCheckpointStorage.js';
export { fromFile } from './fromFile.js';
export { toFile, fileSink } from './toFile.js';
export { lmdbStateBackend, type LmdbStateBackendOptions } from '../state/lmdb/lmdbStateBackend.js';
export { serveQueryableState, type QueryableStateServer, type QueryableStateServerOptions } from './queryableStateServer.js';
export { registerPrometheusMetrics, type MetricsSource } from './metrics/prometheusMetrics.js';
export { WEIR_CHANNELS } from './diagnosticsChannel.js';
export { progressBar, type ProgressBar, type ProgressBarOptions } from './progressBar.js';

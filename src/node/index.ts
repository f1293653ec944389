export { fsCheckpointStorage } from '../storage/fsCheckpointStorage.js';
export { fromFile } from './fromFile.js';
export { toFile, fileSink } from './toFile.js';
export { lmdbStateBackend, type LmdbStateBackendOptions } from '../state/lmdb/lmdbStateBackend.js';
export { serveQueryableState, type QueryableStateServer, type QueryableStateServerOptions } from './queryableStateServer.js';
export { postgresSink, type PostgresSinkOptions } from './connectors/postgres/postgresSink.js';
export { postgresLookup, type PostgresLookup, type PostgresLookupOptions } from './connectors/postgres/postgresLookup.js';
export { PostgresSinkError, PostgresRowError, PostgresLookupError } from './connectors/postgres/postgresErrors.js';
export type { PostgresConnection } from './connectors/postgres/postgresConnection.js';

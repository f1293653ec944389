export { fsCheckpointStorage } from '../storage/fsCheckpointStorage.js';
export { fromFile } from './fromFile.js';
export { toFile, fileSink } from './toFile.js';
export { lmdbStateBackend, type LmdbStateBackendOptions } from '../state/lmdb/lmdbStateBackend.js';
export { serveQueryableState, type QueryableStateServer, type QueryableStateServerOptions } from './queryableStateServer.js';
export { natsSource, type NatsSourceOptions } from './connectors/nats/natsSource.js';
export { natsSink, toNats, type NatsSinkOptions, type NatsMessagePosition } from './connectors/nats/natsSink.js';
export { NATS_BATCH_HEADER, natsBatchPayload, type NatsBatchOptions } from './connectors/nats/natsBatch.js';
export type { NatsBatchedRecord } from './connectors/nats/natsBatchedRecord.js';
export {
  redisStreamSource,
  type RedisStreamSourceOptions,
  type RedisStreamEntry,
  type RedisDeadLetter,
} from './connectors/redis/redisStreamSource.js';
export { redisStreamSink, type RedisStreamSinkOptions } from './connectors/redis/redisStreamSink.js';
export { postgresSink, type PostgresSinkOptions } from './connectors/postgres/postgresSink.js';
export { postgresLookup, type PostgresLookup, type PostgresLookupOptions } from './connectors/postgres/postgresLookup.js';
export { PostgresSinkError, PostgresRowError, PostgresLookupError } from './connectors/postgres/postgresErrors.js';
export type { PostgresConnection } from './connectors/postgres/postgresConnection.js';
export { registerPrometheusMetrics, type MetricsSource } from './metrics/prometheusMetrics.js';
export { WEIR_CHANNELS } from './diagnosticsChannel.js';
export { startJob, type StartJobOptions, type JobDefinition, type JobModuleContext } from './startJob.js';
export { liveJobWorkers } from './nodeWorkerHost.js';
export { progressBar, type ProgressBar, type ProgressBarOptions } from './progressBar.js';
export {
  natsObjectCheckpointStorage,
  type NatsObjectCheckpointStorage,
  type NatsObjectCheckpointStorageOptions,
} from './scaleout/natsObjectCheckpointStorage.js';
export { keyGroupPartitions, type KeyGroupPartitions, type KeyGroupPartitionsOptions } from './scaleout/keyGroupPartitions.js';
export { joinScaleOut, type ScaleOutMember, type ScaleOutMemberOptions } from './scaleout/scaleOutMember.js';
export { rendezvousOwner, assignedKeyGroups } from './scaleout/rendezvousAssignment.js';
export {
  runScaleOut,
  type RunScaleOutOptions,
  type ScaleOutRunner,
  type ScaleOutTask,
  type ScaleOutTaskEvent,
  type ScaleOutJobOptions,
} from './scaleout/runScaleOut.js';
export type { RepartitionOptions } from './scaleout/repartition.js';
export { purgeConsumed, type PurgeConsumedOptions, type PurgedSubject } from './scaleout/purgeConsumed.js';
export { scaleOutSavepoint, type ScaleOutSavepoint, type ScaleOutSavepointOptions } from './scaleout/scaleOutSavepoint.js';
export { scaleOutStatus, type ScaleOutStatus, type ScaleOutStatusOptions, type ScaleOutMemberStatus, type KeyGroupStatus } from './scaleout/scaleOutStatus.js';
export { serveScaleOutQueries, type ServeScaleOutQueriesOptions } from './scaleout/serveScaleOutQueries.js';
export { ScaleOutQueryClient, type ScaleOutQueryClientOptions } from './scaleout/scaleOutQueryClient.js';

// weir: stateful, fault-tolerant stream processing for RxJS. The isomorphic core: jobs, flows, operators, keyed
// state, checkpoints. Node-only parts are in 'weir/node', browser-only parts in 'weir/browser'.
export { createJob, Job, type JobOptions, type CheckpointOptions, type StartOptions } from './core/job';
export { Flow, KeyedFlow } from './core/flow';
export type { RunningJob, JobResult, SavepointOptions } from './core/runningJob';
export type { RestartStrategyOptions } from './core/restartStrategy';
export type { CheckpointStats } from './checkpoint/checkpointStats';
export * from './core/errors';
export type * from './core/types';
export { hashKey, keyGroupOf, keyGroupRangeFor, DEFAULT_MAX_PARALLELISM } from './core/keyGroups';

export { map } from './operators/map';
export { filter } from './operators/filter';
export { flatMap } from './operators/flatMap';
export { keyBy } from './operators/keyBy';
export { reduce, type StatefulOperatorOptions } from './operators/reduce';
export { fold } from './operators/fold';
export { aggregate } from './operators/aggregate';
export { process, type ProcessFunction, type ProcessContext, type Output, type ProcessOptions } from './operators/process';

export { fromArray } from './sources/fromArray';
export { fromIterable } from './sources/fromIterable';
export { fromAsyncIterable } from './sources/fromAsyncIterable';
export { fromObservable } from './sources/fromObservable';

export { sinkTo } from './sinks/sinkTo';
export { collect, type Collector } from './sinks/collect';
export { forEach } from './sinks/forEach';
export { asObservable } from './sinks/asObservable';

export { valueState, listState, mapState, reducingState, aggregatingState, type StateOptions } from './state/descriptors';
export { autoSerializer, jsonSerializer, superjsonSerializer, mapSerializer } from './state/serializers';
export { heapStateBackend } from './state/heap/heapStateBackend';
export { withStateTtl } from './state/ttl/withStateTtl';
export type { Redistribution, OperatorStateOptions } from './state/operatorStateStore';
export { memoryCheckpointStorage } from './storage/memoryCheckpointStorage';

export { readSavepoint, SavepointReader, type SavepointOperator, type SavepointState, type KeyedStateReadOptions } from './stateProcessor/readSavepoint';
export { createSavepoint, deriveSavepoint, SavepointWriter, type CreateSavepointOptions } from './stateProcessor/savepointWriter';

export { assignTimestamps, type WatermarkOptions } from './time/assignTimestamps';
export type { TimeDomain } from './time/timerService';
export { window, type WindowOptions } from './windows/window';
export { WindowedFlow } from './windows/windowedFlow';
export { tumbling, sliding, session, globalWindow, countWindow, type TimeWindowOptions } from './windows/assigners';
export { count, purging, eventTimeTrigger, processingTimeTrigger, neverTrigger } from './windows/triggers';
export type { Window, WindowAssigner, Trigger, TriggerContext, TriggerResult, TriggerState, WindowTime } from './windows/windowTypes';
export type { ProcessWindowFunction, WindowContext } from './windows/windowFunction';
export { sideOutput, lateData, outputTag, type OutputTag } from './operators/sideOutput';
export type { Timers, TimerContext } from './operators/process';
export type { WindowFunctionOptions } from './operators/reduce';
export { union, unionWith } from './operators/union';
export { connect, ConnectedFlows } from './operators/connect';
export { coProcess, type CoProcessFunction } from './operators/coProcess';
export { broadcast, BroadcastFlow } from './operators/broadcast';
export { processBroadcast, type BroadcastProcessFunction, type BroadcastContext, type KeyedBroadcastContext, type ReadOnlyBroadcastState } from './operators/processBroadcast';
export { join, type JoinOptions } from './operators/join';
export { intervalJoin, type IntervalJoinOptions } from './operators/intervalJoin';
export type { CheckpointMode } from './checkpoint/barrierAligner';

export type { QueryOptions, KeyPageOptions, KeyPage, QueryableStateReader } from './query/stateQueries';
export type { QueryableStateInfo } from './query/queryableStateRegistry';
export { QueryableStateClient, type QueryableStateClientOptions } from './query/queryableStateClient';
export {
  UnknownQueryableStateError,
  QueryableStateConflictError,
  QueryableStateUnavailableError,
  InvalidQueryError,
  QueryUnauthorizedError,
  QueryServerUnreachableError,
  QueryRateLimitedError,
  QueryServerError,
} from './query/queryErrors';

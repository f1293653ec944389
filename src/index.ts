// weir: stateful, fault-tolerant stream processing for RxJS. The isomorphic core: jobs, flows, operators, keyed
// state, checkpoints. Node-only parts are in 'weir/node', browser-only parts in 'weir/browser'.
export { createJob, Job, type JobOptions, type CheckpointOptions, type StartOptions } from './runtime/job.js';
export { Flow, KeyedFlow, type OutsideWeir } from './core/flow.js';
// RxJS's own operators in a pipeline: Flow.lift runs them through this module, which registers itself as it loads.
import './operators/rxjs/liftRxjs.js';
export { uncheckpointed } from './operators/rxjs/uncheckpointed.js';
export type { RunningJob, JobResult, RestoredFrom, SavepointOptions } from './runtime/runningJob.js';
export type { RestartStrategyOptions } from './runtime/restartStrategy.js';
export type { CheckpointStats } from './checkpoint/checkpointStats.js';
export * from './core/errors.js';
export type * from './core/types.js';
export { hashKey, keyGroupOf, keyGroupRangeFor, DEFAULT_MAX_PARALLELISM } from './core/keyGroups.js';

export { map } from './operators/map.js';
export { filter } from './operators/filter.js';
export { flatMap } from './operators/flatMap.js';
export { keyBy } from './operators/keyBy.js';
export { reduce, type StatefulOperatorOptions } from './operators/reduce.js';
export { fold } from './operators/fold.js';
export { aggregate } from './operators/aggregate.js';
// `processElements` is `process` under a name that does not shadow Node's global `process` in the importing module.
export { process, process as processElements } from './operators/process.js';
export type { ProcessFunction, ProcessContext, Output, ProcessOptions } from './operators/processFunction.js';

export { fromArray } from './sources/fromArray.js';
export { fromIterable } from './sources/fromIterable.js';
export { fromGenerator } from './sources/fromGenerator.js';
export { fromArrays } from './sources/fromArrays.js';
export { fromSplits } from './sources/fromSplits.js';
export { fromAsyncIterable } from './sources/fromAsyncIterable.js';
export { fromObservable } from './sources/fromObservable.js';

export { sinkTo } from './sinks/sinkTo.js';
export { collect, type Collector } from './sinks/collect.js';
export { forEach } from './sinks/forEach.js';
export { asObservable } from './sinks/asObservable.js';

export { valueState, listState, mapState, reducingState, aggregatingState, type StateOptions } from './state/descriptors.js';
export { autoSerializer, jsonSerializer, superjsonSerializer, mapSerializer } from './state/serializers.js';
export { heapStateBackend } from './state/heap/heapStateBackend.js';
export { withStateTtl } from './state/ttl/withStateTtl.js';
export type { Redistribution, OperatorStateOptions } from './state/operatorStateStore.js';
export { memoryCheckpointStorage } from './storage/memoryCheckpointStorage.js';

export { readSavepoint, SavepointReader, type SavepointOperator, type SavepointState, type KeyedStateReadOptions } from './stateProcessor/readSavepoint.js';
export { createSavepoint, deriveSavepoint, SavepointWriter, type CreateSavepointOptions, type DeriveSavepointOptions } from './stateProcessor/savepointWriter.js';
export type { ProgressListener } from './core/progress.js';

export { assignTimestamps, type WatermarkOptions } from './time/assignTimestamps.js';
export type { SourceWatermarkOptions } from './time/sourceWatermarks.js';
export type { TimeDomain } from './time/timerService.js';
export { window, type WindowOptions } from './windows/window.js';
export { WindowedFlow } from './windows/windowedFlow.js';
export { tumbling, sliding, session, globalWindow, countWindow, type TimeWindowOptions } from './windows/assigners.js';
export { count, purging, eventTimeTrigger, processingTimeTrigger, neverTrigger } from './windows/triggers.js';
export type { Window, WindowAssigner, Trigger, TriggerContext, TriggerResult, TriggerState, WindowTime } from './windows/windowTypes.js';
export type { ProcessWindowFunction, WindowContext } from './windows/windowFunction.js';
export { sideOutput, lateData, outputTag, type OutputTag } from './operators/sideOutput.js';
export type { Timers, TimerContext } from './operators/processFunction.js';
export type { WindowFunctionOptions } from './operators/reduce.js';
export { union, unionWith } from './operators/union.js';
export { connect, ConnectedFlows } from './operators/connect.js';
export { coProcess, type CoProcessFunction } from './operators/coProcess.js';
export { broadcast, BroadcastFlow } from './operators/broadcast.js';
export { processBroadcast, type BroadcastProcessFunction, type BroadcastContext, type KeyedBroadcastContext, type ReadOnlyBroadcastState } from './operators/processBroadcast.js';
export { join, type JoinOptions } from './operators/join.js';
export { intervalJoin, type IntervalJoinOptions } from './operators/intervalJoin.js';
export type { CheckpointMode } from './core/graph.js';

export type { QueryOptions, KeyPageOptions, KeyGroupPageOptions, KeyPage, QueryableStateReader } from './query/stateQueries.js';
export type { QueryableStateInfo } from './query/queryableStateRegistry.js';
export { QueryableStateClient, type QueryableStateClientOptions } from './query/queryableStateClient.js';
export {
  UnknownQueryableStateError,
  QueryableStateConflictError,
  QueryableStateUnavailableError,
  InvalidQueryError,
  QueryUnauthorizedError,
  QueryServerUnreachableError,
  QueryRateLimitedError,
  QueryServerError,
  KeyGroupNotOwnedError,
} from './query/queryErrors.js';
export { mapAsync } from './operators/mapAsync/mapAsync.js';
export type { MapAsyncOptions, AsyncRetryOptions } from './operators/mapAsync/mapAsyncOptions.js';
export type { JobMetrics, OperatorMetrics } from './runtime/jobMetrics.js';
export type { JobView, JobViewOperator, JobViewEvent, MinAvgMax } from './runtime/jobView.js';
export type { JobEvent, JobLogger } from './runtime/jobEvents.js';

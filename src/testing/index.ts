// weir/testing: run pipeline fragments step by step (Flink's operator test harness) and in RxJS marble tests, on
// the same operators, state backends and checkpoint format as a job.
export { harness, Harness, type Fragment, type HarnessOptions, type HeldRecord } from './harness';
export type { HarnessSnapshot } from './harnessSnapshot';
export { marbles, type MarbleHelpers } from './marbles';
export { StreamRecord, record, watermark, barrier, cancelMarker, type OutputElement } from './streamRecord';
export { HarnessInputError, SnapshotMismatchError } from './harnessErrors';
export { advanceClock } from './harnessClock';

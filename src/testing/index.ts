// weir/testing: run pipeline fragments step by step (Flink's operator test harness) and in RxJS marble tests, on
// the same operators, state backends and checkpoint format as a job.
// Fragments may hold RxJS operators: Flow.lift runs them through this module, which registers itself as it loads.
import '../operators/rxjs/liftRxjs.js';
export { harness, Harness } from './harness.js';
export type { Fragment, HarnessOptions, HeldRecord } from './harnessOptions.js';
export type { HarnessSnapshot } from './harnessSnapshot.js';
export { marbles, type MarbleHelpers } from './marbles.js';
export { StreamRecord, record, watermark, barrier, cancelMarker, type OutputElement } from './streamRecord.js';
export { HarnessInputError, SnapshotMismatchError } from './harnessErrors.js';
export { advanceClock } from './harnessClock.js';

// Two-input job modules for the worker-thread tests: two split sources, keyed on both sides, meeting in a
// connect + coProcess (`connected`) or a windowed join (`joined`), written to the file named in WEIR_TEST_JOB. The
// keys' instances spread over the workers, so both inputs of a key cross between workers. Outputs do not depend on
// how the inputs interleave: the coProcess emits each key's totals from an event-time timer that fires at the end of
// input, and the watermark lags by more than the input spans, so no record is late anywhere.
import { assignTimestamps, connect, coProcess, createJob, fromArray, join, keyBy, memoryCheckpointStorage, tumbling, valueState } from '../../../../src/index.js';
import { toFile } from '../../../../src/node/index.js';

export interface Timed {
  key: string;
  at: number;
  value: number;
}

/** The left input: 1200 records over 13 keys, 10 ms apart. */
export const leftRecords = (): Timed[] => Array.from({ length: 1200 }, (_, i) => ({ key: `k${i % 13}`, at: i * 10, value: i }));
/** The right input: 800 records over 13 keys, 15 ms apart. */
export const rightRecords = (): Timed[] => Array.from({ length: 800 }, (_, j) => ({ key: `k${j % 13}`, at: j * 15, value: 10_000 + j }));

/** After every record's time: the coProcess's timers fire at the end of input. */
export const END = 1_000_000_000;

function inputs() {
  const { name, out } = JSON.parse(process.env.WEIR_TEST_JOB!) as { name: string; out: string };
  // Checkpoints every 5 ms and small chunks: barriers usually cross mid-input, aligned over both inputs and the workers' channels.
  const job = createJob({ name, chunkSize: 50, checkpoints: { storage: memoryCheckpointStorage(), interval: 5 } });
  const keyed = (uid: string, records: Timed[], splits: number) =>
    job
      .source(fromArray(records, { splits }), { uid })
      .pipe(assignTimestamps((record: Timed) => record.at, { outOfOrderness: 40_000 }), keyBy((record: Timed) => record.key));
  return { job, out, left: keyed('left', leftRecords(), 3), right: keyed('right', rightRecords(), 2) };
}

const leftSum = valueState<number>('left-sum', { default: 0 });
const rightCount = valueState<number>('right-count', { default: 0 });

export function connected() {
  const { job, out, left, right } = inputs();
  connect(left, right).pipe(
    coProcess<Timed, Timed, string>(
      {
        onElement1(record, ctx) {
          ctx.state(leftSum).update((ctx.state(leftSum).value() ?? 0) + record.value);
          ctx.timers.registerEventTimeTimer(END);
        },
        onElement2(_record, ctx) {
          ctx.state(rightCount).update((ctx.state(rightCount).value() ?? 0) + 1);
          ctx.timers.registerEventTimeTimer(END);
        },
        onTimer(_time, ctx, out) {
          out.emit(`${String(ctx.key)}=${ctx.state(leftSum).value()}/${ctx.state(rightCount).value()}`);
        },
      },
      { uid: 'totals', states: [leftSum, rightCount] },
    ),
    toFile(out, { uid: 'out', format: (line: string) => line }),
  );
  return job;
}

export function joined() {
  const { job, out, left, right } = inputs();
  join(left, right, { window: tumbling(1_000), apply: (l: Timed, r: Timed) => `${l.key}@${Math.floor(l.at / 1_000)}:${l.value}+${r.value}`, uid: 'pairs' }).pipe(
    toFile(out, { uid: 'out', format: (line: string) => line }),
  );
  return job;
}

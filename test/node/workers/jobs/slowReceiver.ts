// A job module for the worker-thread credit test: worker 0's split sends all its records to worker 1, whose keyed
// operator spends a few µs on each of them (its first record per key excepted: reduce stores it as it is), so worker 0 reads far faster than worker 1 consumes. The stateless map
// after the source runs in the source's worker: in worker 0 it notes the largest lead of records read over records
// worker 1 consumed (worker 1 reports its count in a file), and writes it to `lead` after its last record.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { DEFAULT_MAX_PARALLELISM, instanceOfKey } from '../../../../src/core/keyGroups.js';
import { createJob, fromArray, keyBy, map, reduce } from '../../../../src/index.js';

export interface SlowReceiverSettings {
  name: string;
  /** Records per split. */
  records: number;
  /** Where worker 1 reports how many of worker 0's records it consumed. */
  progress: string;
  /** Where worker 0 writes its largest lead. */
  lead: string;
}

interface Item {
  key: string;
  value: number;
  /** Which split (so which worker) read it. */
  half: 0 | 1;
}

/** How often worker 0 looks at worker 1's progress, and worker 1 reports it. */
const EVERY = 256;

/** Keys whose instance (of 2) is `instance`. */
function keysOf(instance: number, count: number): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) if (instanceOfKey(`key-${i}`, 2, DEFAULT_MAX_PARALLELISM) === instance) keys.push(`key-${i}`);
  return keys;
}

function spin(value: number): number {
  let x = value;
  for (let i = 0; i < 3000; i++) x = (x * 1_103_515_245 + 12_345) | 0;
  return x;
}

export default function slowReceiver() {
  const settings = JSON.parse(process.env.WEIR_TEST_JOB!) as SlowReceiverSettings;
  const { records } = settings;
  const toWorker1 = keysOf(1, 8);
  const toWorker0 = keysOf(0, 8);
  // Split 0 (worker 0) holds keys of instance 1 (worker 1), split 1 the other way round.
  const items: Item[] = [
    ...Array.from({ length: records }, (_, i): Item => ({ key: toWorker1[i % 8]!, value: i, half: 0 })),
    ...Array.from({ length: records }, (_, i): Item => ({ key: toWorker0[i % 8]!, value: i, half: 1 })),
  ];
  let read = 0;
  let lead = 0;
  let reported = 0;
  let consumed = 0;
  const job = createJob({ name: settings.name });
  job
    .source(fromArray(items, { splits: 2 }), { uid: 'items' })
    .pipe(
      map((item: Item) => {
        if (item.half !== 0) return item;
        read++;
        if (read % EVERY === 0) {
          // Empty until worker 1 first reports (written whole by a rename).
          const text = readFileSync(settings.progress, { encoding: 'utf8', flag: 'a+' });
          if (text !== '') reported = Number(text);
          lead = Math.max(lead, read - reported);
        }
        if (read === records) writeFileSync(settings.lead, String(lead));
        return item;
      }),
      keyBy((item: Item) => item.key),
      reduce(
        (a: Item, b: Item) => {
          if (b.half !== 0) return { ...a, value: a.value + b.value };
          if (++consumed % EVERY === 0) {
            writeFileSync(`${settings.progress}.next`, String(consumed));
            renameSync(`${settings.progress}.next`, settings.progress);
          }
          return { ...a, value: a.value + (spin(b.value) & 1) + b.value };
        },
        { uid: 'sum' },
      ),
    );
  return job;
}

import { forEach } from 'weir';
import { keyGroupPartitions, natsObjectCheckpointStorage, natsSource, runScaleOut } from 'weir/node';

/**
 * One member process of `npm run bench -- scaleout` (bench/scaleout.ts starts it): runs a scale-out job whose tasks
 * read their key group's partition of `<stream>.in.<kg>` and spend ~2 µs of busy work per record. It prints
 * `joined`, `start <kg> <epoch ms> <restored>` and `end <kg>` as a task starts and ends, `first <kg> <epoch ms>` at a restored task's first
 * record, `processed <n>` (its records so far) every 100 ms, and `left` or `failed <error>` as it ends.
 *
 *     scaleoutMember.ts <servers> <group> <member> <partitions> <lease ms> <stream> <bucket>
 */
const [servers, group, member, partitions, lease, stream, bucket] = process.argv.slice(2) as [string, string, string, string, string, string, string];
const maxParallelism = Number(partitions);
const say = (line: string) => process.stdout.write(`${line}\n`);
const topic = keyGroupPartitions({ prefix: stream, topic: 'in', maxParallelism });
let processed = 0;
const runner = await runScaleOut(
  (task) => {
    // Chunks of 128 records rather than 1,024: a member's 16 tasks each emit a chunk per event-loop turn, and its lease
    // renewal awaits about 20 KV round trips a turn each; at 1,024 (~4 ms of CPU each) a loaded machine made turns of
    // 200–700 ms, and a member was fenced despite the 10 s lease.
    const job = task.createJob({ chunkSize: 128 });
    let first = true;
    job
      .source(natsSource<{ user: string }>({ servers, stream, subjects: topic.subjects([task.keyGroup]), bounded: false, batch: 1000 }), { uid: 'in' })
      .pipe(
        forEach(
          () => {
            if (first) {
              first = false;
              say(`first ${task.keyGroup} ${Date.now()}`);
            }
            // ~2 µs of work per record.
            const until = process.hrtime.bigint() + 2000n;
            while (process.hrtime.bigint() < until);
            processed++;
          },
          { uid: 'work' },
        ),
      );
    return job;
  },
  {
    servers,
    group,
    member,
    maxParallelism,
    lease: Number(lease),
    storage: natsObjectCheckpointStorage({ servers, bucket }),
    checkpointInterval: 1000,
    onTask(event) {
      if (event.type === 'start') say(`start ${event.keyGroup} ${Date.now()} ${event.restoredFrom ?? '-'}`);
      else if (event.type === 'end') say(`end ${event.keyGroup}`);
    },
  },
);
say('joined');
setInterval(() => say(`processed ${processed}`), 100).unref();
process.on('SIGTERM', () => void runner.leave().then(() => process.exit(0)));
const ended = await runner.done.then(
  () => 'left',
  (error: unknown) => `failed ${String(error)}`,
);
say(ended);
process.exit(ended === 'left' ? 0 : 3);

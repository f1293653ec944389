import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, createJob, keyBy, memoryCheckpointStorage, process, tumbling, window } from 'weir';
import { natsSource } from 'weir/node';
import { serverUp } from '../../support/servers';
import { NATS, natsStreams, type NatsStreams } from './natsStreams';

const up = await serverUp('nats');

interface Reading {
  k: string;
  t: number;
}

/** `[subject's last token, window start, records in it]` per window firing. */
type Firing = [string, number, number];

describe.skipIf(!up)('natsSource with watermarks per subject (job.source(…, { watermarks }))', () => {
  let nats: NatsStreams;
  beforeAll(async () => {
    nats = await natsStreams();
  });
  afterAll(async () => {
    await nats?.removeAll();
  });

  it('one subtask follows two subjects: the lagging one makes no record late, and once idle it holds no window back', { timeout: 120_000 }, async () => {
    const stream = await nats.create('weir_wm');
    // Subject a's event time runs to 390, subject b's (lagging) to 195; then both have nothing more.
    const a = Array.from({ length: 40 }, (_, i) => [`${stream}.a`, JSON.stringify({ k: 'a', t: i * 10 })] as const);
    const b = Array.from({ length: 40 }, (_, i) => [`${stream}.b`, JSON.stringify({ k: 'b', t: i * 5 })] as const);
    await nats.publish([...a, ...b]);
    const out = collect<Firing>();
    const job = createJob({ name: 'nats-watermarks', checkpoints: { storage: memoryCheckpointStorage(), interval: 60_000 } });
    job
      .source(natsSource<Reading>({ servers: NATS, stream, bounded: false, batch: 8 }), {
        uid: 'readings',
        parallelism: 1,
        // b is idle once it has had nothing for 3 s (generous: its first records must come before, or they would be late).
        watermarks: { timestamp: (r) => r.t, interval: 100, idleTimeout: 3_000 },
      })
      .pipe(
        keyBy((r) => r.k),
        window(tumbling(100)),
        process<Reading, Firing>({ process: (key, ctx, elements, out) => out.emit([String(key), ctx.window.start, elements.length]) }),
        out.sink({ uid: 'out' }),
      );
    const running = job.start();
    // a's window [200,300) fires while the job runs only once b (whose event time stopped at 195) is idle. a goes on
    // getting a record (t = 400, never late: a's watermark stays at 399) per checkpoint, so that it stays active: were every split idle, event time
    // would stand still, as in Flink.
    while (!out.values.some(([k, start]) => k === 'a' && start === 200)) {
      await nats.publish([[`${stream}.a`, JSON.stringify({ k: 'a', t: 400 })]]);
      await running.checkpoint();
    }
    await running.stop();
    const fired = [...out.values].sort((x, y) => x[0].localeCompare(y[0]) || x[1] - y[1]);
    // Every record counted (none of b's late), each window once; a's [400,500) is still open (a stop does not end
    // event time, as Flink's stop without --drain).
    expect(fired).toEqual([
      ['a', 0, 10],
      ['a', 100, 10],
      ['a', 200, 10],
      ['a', 300, 10],
      ['b', 0, 20],
      ['b', 100, 20],
    ]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, createJob, fromArray, keyBy, map, memoryCheckpointStorage, reduce, ConnectorError, MalformedRecordError, type RunningJob } from 'weir';
import { natsSink, natsSource, toNats } from 'weir/node';
import { serverUp } from '../../support/servers';
import { NATS, natsStreams, type NatsStreams } from './natsStreams';

const up = await serverUp('nats');

interface Event {
  i: number;
}

/** `count` messages spread over `subjects` in turn, payload `{ i }`. */
const spread = (subjects: readonly string[], count: number) => Array.from({ length: count }, (_, i) => [subjects[i % subjects.length]!, JSON.stringify({ i })] as const);

/** Takes checkpoints until `done()` holds on what the sinks committed, then stops the job (no sleeps: each checkpoint is awaited). */
async function runUntil(running: RunningJob, done: () => boolean): Promise<void> {
  while (!done()) await running.checkpoint();
  await running.stop();
}

describe.skipIf(!up)('natsSource', () => {
  let nats: NatsStreams;
  beforeAll(async () => {
    nats = await natsStreams();
  });
  afterAll(async () => {
    await nats?.removeAll();
  });

  it('has a split per subject and resumes each split after the sequence it saved', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_src');
    const subjects = ['a', 'b', 'c'].map((s) => `${stream}.${s}`);
    await nats.publish(spread(subjects, 300));
    const source = natsSource<Event>({ servers: NATS, stream, batch: 16 });
    try {
      const splits = await source.splits!.list();
      expect(splits.map((split) => split.id)).toEqual(subjects);
      for (const [k, split] of splits.entries()) {
        const expected = Array.from({ length: 100 }, (_, n) => ({ i: n * 3 + k }));
        const first = await source.splits!.open(split, { uid: 'src', restoredOffset: undefined });
        const head: Event[] = [];
        while (head.length < 37) head.push(...((await first.read(37 - head.length)) ?? []));
        const saved = first.offset();
        // The 37th message of subject k is stream sequence 36 * 3 + k + 1.
        expect(saved).toBe(36 * 3 + k + 1);
        await first.close?.();
        const second = await source.splits!.open(split, { uid: 'src', restoredOffset: saved });
        const rest: Event[] = [];
        for (let batch = await second.read(1000); batch !== null; batch = await second.read(1000)) rest.push(...batch);
        expect([...head, ...rest]).toEqual(expected);
        expect(second.offset()).toBe(99 * 3 + k + 1);
      }
    } finally {
      source.ended?.();
    }
  });

  it('counts every message exactly once across a stop and a restore of the job', { timeout: 240_000 }, async () => {
    const stream = await nats.create('weir_restore');
    const subjects = ['a', 'b', 'c'].map((s) => `${stream}.${s}`);
    await nats.publish(spread(subjects, 150));
    const storage = memoryCheckpointStorage();
    const run = (out: ReturnType<typeof collect<{ subject: string; n: number }>>) => {
      const job = createJob({ name: 'nats-restore', checkpoints: { storage, interval: 60_000 } });
      job
        .source(natsSource<{ subject: string }>({ servers: NATS, stream, bounded: false, parse: (m) => ({ subject: m.subject }) }), { uid: 'orders', parallelism: 3 })
        .pipe(
          map((e) => ({ subject: e.subject, n: 1 })),
          keyBy((e) => e.subject),
          reduce((total, e) => ({ subject: total.subject, n: total.n + e.n }), { uid: 'count' }),
          out.sink({ uid: 'out' }),
        );
      return job;
    };
    const totals = (values: readonly { subject: string; n: number }[]) => {
      const last = new Map<string, number>();
      for (const { subject, n } of values) last.set(subject, n);
      return Object.fromEntries([...last].sort());
    };
    const first = collect<{ subject: string; n: number }>();
    await runUntil(run(first).start(), () => first.values.length === 150);
    expect(totals(first.values)).toEqual(Object.fromEntries(subjects.map((s) => [s, 50])));

    await nats.publish(spread(subjects, 60));
    const second = collect<{ subject: string; n: number }>();
    const running = run(second).start({ restore: 'latest' });
    await runUntil(running, () => second.values.length >= 60);
    // Exactly the 60 new messages were read (none of the 150 again), and the restored counts went on from 50.
    expect(second.values).toHaveLength(60);
    expect(totals(second.values)).toEqual(Object.fromEntries(subjects.map((s) => [s, 70])));
  });

  it('follows every subject of an unbounded stream with one subtask, idle subjects not stopping the busy one', { timeout: 120_000 }, async () => {
    const stream = await nats.create('weir_follow');
    const subjects = ['a', 'b', 'c'].map((s) => `${stream}.${s}`);
    await nats.publish(spread(subjects, 90));
    const out = collect<{ subject: string; n: number }>();
    const job = createJob({ name: 'nats-follow', checkpoints: { storage: memoryCheckpointStorage(), interval: 60_000 } });
    job
      .source(natsSource<{ n: number }>({ servers: NATS, stream, bounded: false, parse: (m) => ({ subject: m.subject, n: m.seq }) }), { uid: 'orders', parallelism: 1 })
      .pipe(out.sink({ uid: 'out' }));
    const running = job.start();
    while (out.values.length < 90) await running.checkpoint();
    // Now only the last subject gets messages: the two before it have nothing, and their reads wait meanwhile.
    await nats.publish(Array.from({ length: 30 }, (_, i) => [subjects[2]!, JSON.stringify({ i })] as const));
    await runUntil(running, () => out.values.length >= 120);
    expect(out.values).toHaveLength(120);
    for (const subject of subjects) {
      const sequences = out.values.filter((v) => v.subject === subject).map((v) => v.n);
      expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
      expect(sequences).toHaveLength(subject === subjects[2] ? 60 : 30);
    }
  });

  it('reads a bounded stream to the end with event time from a header, and ends', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_bounded');
    const { js } = { js: (await import('@nats-io/jetstream')).jetstream(nats.connection) };
    const { headers } = await import('@nats-io/transport-node');
    for (let i = 0; i < 20; i++) {
      const h = headers();
      h.set('Event-Time', String(1_000 + i));
      await js.publish(`${stream}.${i % 2 ? 'odd' : 'even'}`, JSON.stringify({ i }), { headers: h });
    }
    const out = collect<{ i: number; at: number }>();
    const job = createJob({ name: 'nats-bounded' });
    job
      .source(
        natsSource<{ i: number; at: number }>({
          servers: NATS,
          stream,
          timestamp: (m) => Number(m.headers?.get('Event-Time')),
          parse: (m, at) => ({ ...m.json<Event>(), at: at! }),
        }),
        { uid: 'events', parallelism: 2 },
      )
      .pipe(out.sink());
    await job.start().done;
    expect([...out.values].sort((a, b) => a.i - b.i)).toEqual(Array.from({ length: 20 }, (_, i) => ({ i, at: 1_000 + i })));
  });

  it('takes a message without a valid event time for a malformed one', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_no_time');
    await nats.publish([[`${stream}.clicks`, '{"i":0}']]);
    const job = createJob({ name: 'nats-no-time' });
    job
      .source(natsSource<Event>({ servers: NATS, stream, timestamp: (m) => Number(m.headers?.get('Event-Time')) }), { uid: 'clicks' })
      .pipe(collect<Event>().sink());
    const error = await job.start().done.then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedRecordError);
    expect((error as Error).message).toContain(`message 1 of stream '${stream}' (split '${stream}.clicks') cannot be parsed: its event time is NaN`);
  });

  it('fails on a malformed message with an error naming stream, sequence and split, or sends it to deadLetter', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_bad');
    const subject = `${stream}.orders`;
    await nats.publish([[subject, '{"i":0}'], [subject, 'not json'], [subject, '{"i":2}']]);
    const failing = createJob({ name: 'nats-bad' });
    failing.source(natsSource<Event>({ servers: NATS, stream }), { uid: 'orders' }).pipe(collect<Event>().sink());
    const error = await failing.start().done.then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedRecordError);
    const message = (error as Error).message;
    expect(message).toContain(`stream '${stream}'`);
    expect(message).toContain('message 2');
    expect(message).toContain(`split '${subject}'`);
    expect(message).toContain('deadLetter');

    const dlq = await nats.create('weir_dlq');
    const out = collect<Event>();
    const job = createJob({ name: 'nats-dead-letter' });
    job.source(natsSource<Event>({ servers: NATS, stream, deadLetter: `${dlq}.bad` }), { uid: 'orders' }).pipe(out.sink());
    await job.start().done;
    expect(out.values).toEqual([{ i: 0 }, { i: 2 }]);
    const [dead, ...more] = await nats.contents(dlq);
    expect(more).toEqual([]);
    expect(dead).toMatchObject({ subject: `${dlq}.bad`, data: 'not json', headers: { 'Weir-Stream': stream, 'Weir-Sequence': '2', 'Weir-Split': subject } });
    expect(dead!.headers['Weir-Reason']).toMatch(/JSON/);
  });
});

describe.skipIf(!up)('natsSink', () => {
  let nats: NatsStreams;
  beforeAll(async () => {
    nats = await natsStreams();
  });
  afterAll(async () => {
    await nats?.removeAll();
  });

  it('publishes every record once, in order, at the end of a job', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_sink');
    const job = createJob({ name: 'nats-sink', checkpoints: { storage: memoryCheckpointStorage(), interval: 5 } });
    job.source(fromArray(Array.from({ length: 500 }, (_, i) => ({ i }))), { uid: 'n' }).pipe(toNats<Event>({ servers: NATS, subject: (e) => `${stream}.${e.i % 2}` }, { uid: 'out' }));
    await job.start().done;
    const contents = await nats.contents(stream);
    expect(contents.map((m) => JSON.parse(m.data) as Event)).toEqual(Array.from({ length: 500 }, (_, i) => ({ i })));
    expect(contents.map((m) => m.subject)).toEqual(Array.from({ length: 500 }, (_, i) => `${stream}.${i % 2}`));
    expect(new Set(contents.map((m) => m.headers['Nats-Msg-Id'])).size).toBe(500);
  });

  it('fails the checkpoints, not the job, while no stream takes its messages, and publishes them once one does', { timeout: 60_000 }, async () => {
    // A stream that does not capture the sink's subject yet: every publish is refused, as when the server is gone.
    const name = await nats.create('weir_outage');
    await nats.jsm.streams.update(name, { subjects: [`${name}.elsewhere`] });
    const sink = natsSink<Event>({ servers: NATS, subject: () => `${name}.out` });
    try {
      const writer = await sink.open({ uid: 'out', restoredState: undefined, checkpointing: true });
      for (let i = 0; i < 5; i++) writer.write({ i });
      await writer.snapshot!(1);
      // The commit of a completed checkpoint that cannot publish does not fail the attempt…
      await writer.commit!(1);
      for (let i = 5; i < 8; i++) writer.write({ i });
      // …the next checkpoint fails instead (counted against tolerableFailures), its records held with the others.
      const failed = await Promise.resolve(writer.snapshot!(2)).then(() => undefined, (e: unknown) => e);
      expect(failed).toBeInstanceOf(ConnectorError);
      expect((failed as Error).message).toMatch(/checkpoint 2 fails: the records of checkpoint 1 are still not published/);
      expect(await nats.contents(name)).toEqual([]);

      await nats.jsm.streams.update(name, { subjects: [`${name}.>`] });
      await writer.snapshot!(3);
      expect((await nats.contents(name)).map((m) => JSON.parse(m.data) as Event)).toEqual(Array.from({ length: 5 }, (_, i) => ({ i })));
      await writer.commit!(3);
      expect((await nats.contents(name)).map((m) => JSON.parse(m.data) as Event)).toEqual(Array.from({ length: 8 }, (_, i) => ({ i })));
    } finally {
      sink.ended?.(undefined);
    }
  });

  it('holds records until the checkpoint completes, and a replayed commit is deduplicated by the stream', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_dedup');
    const sink = natsSink<Event>({ servers: NATS, subject: () => `${stream}.out` });
    try {
      const writer = await sink.open({ uid: 'out', restoredState: undefined, checkpointing: true });
      for (let i = 0; i < 10; i++) writer.write({ i });
      const first = await writer.snapshot!(1);
      expect(await nats.contents(stream)).toEqual([]);
      await writer.commit!(1);
      expect(await nats.contents(stream)).toHaveLength(10);
      for (let i = 10; i < 15; i++) writer.write({ i });
      // Crash after the barrier of checkpoint 2, before its commit: its records are only in the checkpoint.
      const second = await writer.snapshot!(2);
      await writer.abort();

      // A restore from checkpoint 1 commits it again: the stream drops every message of it as a duplicate.
      const replay = await sink.open({ uid: 'out', restoredState: first, checkpointing: true });
      await replay.abort();
      expect(await nats.contents(stream)).toHaveLength(10);
      // A restore from checkpoint 2 publishes what it held, and nothing twice.
      const restored = await sink.open({ uid: 'out', restoredState: second, checkpointing: true });
      for (let i = 15; i < 20; i++) restored.write({ i });
      await restored.finish();
      expect((await nats.contents(stream)).map((m) => JSON.parse(m.data) as Event)).toEqual(Array.from({ length: 20 }, (_, i) => ({ i })));
    } finally {
      sink.ended?.(undefined);
    }
  });
});

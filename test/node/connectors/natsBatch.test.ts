import { jetstream } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointCorruptedError, collect, createJob, fold, fromArray, JobDefinitionError, keyBy, map, MalformedRecordError, memoryCheckpointStorage, type RunningJob } from 'weir';
import { NATS_BATCH_HEADER, natsBatchPayload, natsSink, natsSource, toNats } from 'weir/node';
import { serverUp } from '../../support/servers';
import { NATS, natsStreams, type NatsStreams } from './natsStreams';

// Several records per JetStream message (README "NATS JetStream", batches): toNats packs them, natsSource unpacks
// them, and a checkpoint may fall between two records of one message.

const up = await serverUp('nats');

interface Event {
  i: number;
}

const events = (from: number, to: number): Event[] => Array.from({ length: to - from }, (_, k) => ({ i: from + k }));

describe.skipIf(!up)('NATS batches: several records per message', () => {
  let nats: NatsStreams;
  beforeAll(async () => {
    nats = await natsStreams();
  });
  afterAll(async () => {
    await nats?.removeAll();
  });

  /** Publishes each batch of records as one message (a plain one for a single record, as toNats does). */
  const publishBatches = (subject: string, batches: readonly Event[][]) => nats.publishBatches(batches.map((batch) => [subject, batch.map((e) => JSON.stringify(e))]));

  it('toNats packs each subject’s records into messages of maxRecords, and natsSource reads them back record by record', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_batch_rt');
    const producer = createJob({ name: 'nats-batch-produce' });
    producer
      .source(fromArray(events(0, 250)), { uid: 'n' })
      .pipe(toNats<Event>({ servers: NATS, subject: (e) => `${stream}.${e.i % 2}`, batch: { maxRecords: 50 } }, { uid: 'out' }));
    await producer.start().done;

    const contents = await nats.contents(stream);
    // 125 records per subject: 50, 50 and 25 per message, in order of their first record.
    expect(contents.map((m) => [m.subject.slice(stream.length + 1), m.headers[NATS_BATCH_HEADER]])).toEqual([
      ['0', '50'],
      ['1', '50'],
      ['0', '50'],
      ['1', '50'],
      ['0', '25'],
      ['1', '25'],
    ]);
    expect(contents[0]!.data.split('\n').slice(0, 3)).toEqual(['{"i":0}', '{"i":2}', '{"i":4}']);
    expect(new Set(contents.map((m) => m.headers['Nats-Msg-Id'])).size).toBe(6);

    const out = collect<Event>();
    const consumer = createJob({ name: 'nats-batch-consume' });
    consumer.source(natsSource<Event>({ servers: NATS, stream }), { uid: 'in' }).pipe(out.sink());
    await consumer.start().done;
    expect(out.values).toHaveLength(250);
    for (const parity of [0, 1]) expect(out.values.filter((e) => e.i % 2 === parity)).toEqual(events(0, 250).filter((e) => e.i % 2 === parity));
  });

  it('cuts a batch at maxBytes, and publishes a record whose payload holds a newline as a message of its own', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_batch_bytes');
    // Payloads of 7 bytes: 3 of them (with 2 newlines) make 23 bytes, so maxBytes 23 takes 3, and 22 only 2.
    const sink = natsSink<{ p: string }>({ servers: NATS, subject: () => `${stream}.out`, serialize: (r) => r.p, batch: { maxBytes: 22 } });
    try {
      const writer = await sink.open({ uid: 'out', restoredState: undefined, checkpointing: true });
      for (const p of ['aaaaaaa', 'bbbbbbb', 'ccccccc', 'two\nlns', 'ddddddd']) writer.write({ p });
      await writer.snapshot!(1);
      await writer.commit!(1);
      expect((await nats.contents(stream)).map((m) => [m.data, m.headers[NATS_BATCH_HEADER]])).toEqual([
        ['aaaaaaa\nbbbbbbb', '2'],
        ['ccccccc', undefined],
        ['two\nlns', undefined],
        ['ddddddd', undefined],
      ]);
    } finally {
      sink.ended?.(undefined);
    }
    expect(() => natsSink({ servers: NATS, subject: () => 'x', batch: { maxRecords: 0 } })).toThrow(JobDefinitionError);
    expect(() => natsSink({ servers: NATS, subject: () => 'x', batch: { maxBytes: 1.5 } })).toThrow(/batch.maxBytes must be an integer ≥ 1, got 1.5/);
    expect(() => natsBatchPayload(['a', 'b\nc'])).toThrow(/record 1 of the batch holds a newline/);
  });

  it('a replayed commit packs the same messages under the same ids: the stream drops them as duplicates', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_batch_dedup');
    const sink = natsSink<Event>({ servers: NATS, subject: (e) => `${stream}.${e.i % 3}`, batch: { maxRecords: 4 } });
    try {
      const writer = await sink.open({ uid: 'out', restoredState: undefined, checkpointing: true });
      for (const e of events(0, 20)) writer.write(e);
      const first = await writer.snapshot!(1);
      await writer.commit!(1);
      const published = await nats.contents(stream);
      expect(published.length).toBeGreaterThan(1);
      // A crash after checkpoint 1's commit: a restore from it publishes its records again, as the same messages.
      const replay = await sink.open({ uid: 'out', restoredState: first, checkpointing: true });
      for (const e of events(20, 26)) replay.write(e);
      await replay.finish();
      const after = await nats.contents(stream);
      expect(after.slice(0, published.length)).toEqual(published);
      const records = after.flatMap((m) => m.data.split('\n').map((line) => JSON.parse(line) as Event));
      expect(records.map((e) => e.i).sort((a, b) => a - b)).toEqual(events(0, 26).map((e) => e.i));
    } finally {
      sink.ended?.(undefined);
    }
  });

  it('a split read in the middle of a batch saves [sequence, records read], and a reader opened there goes on at the next record', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_batch_split');
    const subject = `${stream}.a`;
    // Sequence 1: records 0–9; 2: record 10 alone; 3: records 11–15.
    await publishBatches(subject, [events(0, 10), events(10, 11), events(11, 16)]);
    const source = natsSource<Event>({ servers: NATS, stream });
    try {
      const [split] = await source.splits!.list();
      const first = await source.splits!.open(split!, { uid: 'src', restoredOffset: undefined });
      expect(await first.read(4)).toEqual(events(0, 4));
      expect(first.offset()).toEqual([1, 4]);
      expect(await first.read(4)).toEqual(events(4, 8));
      const saved = first.offset();
      expect(saved).toEqual([1, 8]);
      await first.close?.();

      const second = await source.splits!.open(split!, { uid: 'src', restoredOffset: saved });
      // A barrier before the first read saves the same position again.
      expect(second.offset()).toEqual([1, 8]);
      const rest: Event[] = [];
      for (let batch = await second.read(3); batch !== null; batch = await second.read(3)) rest.push(...batch);
      expect(rest).toEqual(events(8, 16));
      // At the end of a message, the offset is its sequence alone.
      expect(second.offset()).toBe(3);

      // Every record of message 1 read: the reader goes on with message 2.
      const third = await source.splits!.open(split!, { uid: 'src', restoredOffset: [1, 10] });
      expect(await third.read(100)).toEqual(events(10, 16));
      await third.close?.();
      await expect(Promise.resolve().then(() => source.splits!.open(split!, { uid: 'src', restoredOffset: [1] }))).rejects.toThrow(CheckpointCorruptedError);
    } finally {
      source.ended?.();
    }
  });

  it('a job checkpointed between two records of one message restores at the next record: none lost, none counted twice', { timeout: 120_000 }, async () => {
    const stream = await nats.create('weir_batch_barrier');
    const total = 1010;
    // One message of 1000 records, then one of 10: read 3 records at a time (chunkSize), a barrier falls inside the first.
    await publishBatches(`${stream}.a`, [events(0, 1000), events(1000, total)]);
    const storage = memoryCheckpointStorage();
    const build = (out: ReturnType<typeof collect<number>>, seen: number[], onRecord: (i: number) => void = () => undefined) => {
      const job = createJob({ name: 'nats-batch-barrier', chunkSize: 3, checkpoints: { storage, interval: 60_000 } });
      job
        .source(natsSource<Event>({ servers: NATS, stream, bounded: false }), { uid: 'in' })
        .pipe(
          map((e) => {
            seen.push(e.i);
            onRecord(e.i);
            return e;
          }),
          keyBy(() => 'all'),
          fold(0, (n: number) => n + 1, { uid: 'count' }),
          out.sink({ uid: 'out' }),
        );
      return job;
    };

    const firstOut = collect<number>();
    const firstSeen: number[] = [];
    let running: RunningJob | undefined;
    let checkpointed: Promise<unknown> | undefined;
    running = build(firstOut, firstSeen, (i) => {
      if (i === 6) checkpointed = running!.checkpoint();
    }).start();
    while (checkpointed === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    await checkpointed;
    // A crash after the checkpoint: what the job read after it is not committed anywhere.
    await running.cancel();
    const covered = firstOut.values.length;
    expect(firstOut.values).toEqual(Array.from({ length: covered }, (_, k) => k + 1));
    // The barrier fell inside the first message (after a multiple of 3 records), not at a message's end.
    expect(covered % 3).toBe(0);
    expect(covered).toBeGreaterThan(0);
    expect(covered).toBeLessThan(1000);

    const secondOut = collect<number>();
    const secondSeen: number[] = [];
    running = build(secondOut, secondSeen).start({ restore: 'latest' });
    while (secondOut.values.length < total - covered) await running.checkpoint();
    await running.stop();
    // It read on from the record after the checkpoint's, and the restored count went on from there.
    expect(secondSeen).toEqual(Array.from({ length: total - covered }, (_, k) => covered + k));
    expect(secondOut.values).toEqual(Array.from({ length: total - covered }, (_, k) => covered + k + 1));
  });

  it('parse and timestamp take a batch’s record as a message of its own; a malformed record fails the job naming it, or goes to deadLetter alone', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_batch_parse');
    const subject = `${stream}.a`;
    const js = jetstream(nats.connection);
    const h = headers();
    h.set(NATS_BATCH_HEADER, '3');
    h.set('Event-Time', '5000');
    await js.publish(subject, '{"i":0}\nnot json\n{"i":2}', { headers: h });
    const h2 = headers();
    h2.set(NATS_BATCH_HEADER, '4');
    await js.publish(subject, '{"i":3}\n{"i":4}', { headers: h2 });

    const failing = createJob({ name: 'nats-batch-bad' });
    failing.source(natsSource<Event>({ servers: NATS, stream }), { uid: 'in' }).pipe(collect<Event>().sink());
    const error = await failing.start().done.then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedRecordError);
    expect((error as Error).message).toContain(`record 1 of message 1 of stream '${stream}' (split '${subject}') cannot be parsed`);

    const dlq = await nats.create('weir_batch_dlq');
    const out = collect<{ i: number; seq: number; index: number; at: number }>();
    const job = createJob({ name: 'nats-batch-dead-letter' });
    job
      .source(
        natsSource({
          servers: NATS,
          stream,
          deadLetter: `${dlq}.bad`,
          timestamp: (m) => Number(m.headers?.get('Event-Time') || 0),
          parse: (m, at) => ({ ...m.json<Event>(), seq: m.seq, index: (m as { index?: number }).index ?? -1, at: at! }),
        }),
        { uid: 'in' },
      )
      .pipe(out.sink());
    await job.start().done;
    expect(out.values).toEqual([
      { i: 0, seq: 1, index: 0, at: 5000 },
      { i: 2, seq: 1, index: 2, at: 5000 },
    ]);
    const dead = await nats.contents(dlq);
    expect(dead.map((m) => [m.data, m.headers['Weir-Sequence'], m.headers['Weir-Record'], m.headers[NATS_BATCH_HEADER]])).toEqual([
      ['not json', '1', '1', undefined],
      // A batch whose count and payload disagree is malformed as a whole, and goes on whole.
      ['{"i":3}\n{"i":4}', '2', undefined, '4'],
    ]);
    expect(dead[1]!.headers['Weir-Reason']).toContain('says 4 records, its payload holds 2');
  });

  it('without parse, a batch is parsed as one array; a record that is not one JSON value of its own still goes to deadLetter alone', { timeout: 60_000 }, async () => {
    const stream = await nats.create('weir_batch_json');
    const subject = `${stream}.a`;
    const js = jetstream(nats.connection);
    const batchHeaders = (count: number) => {
      const h = headers();
      h.set(NATS_BATCH_HEADER, String(count));
      return h;
    };
    await js.publish(subject, '{"i":0}\n{"i":1\n{"i":2}', { headers: batchHeaders(3) });
    // Two values on one line: the lines joined would parse as three records, one more than the message holds.
    await js.publish(subject, '{"i":3},{"i":4}\n{"i":5}', { headers: batchHeaders(2) });
    await js.publish(subject, '{"i":6}\n{"i":7}\n{"i":8}', { headers: batchHeaders(3) });

    const dlq = await nats.create('weir_batch_json_dlq');
    const out = collect<Event>();
    const job = createJob({ name: 'nats-batch-json' });
    job.source(natsSource<Event>({ servers: NATS, stream, deadLetter: `${dlq}.bad` }), { uid: 'in' }).pipe(out.sink());
    await job.start().done;
    expect(out.values).toEqual([{ i: 0 }, { i: 2 }, { i: 5 }, { i: 6 }, { i: 7 }, { i: 8 }]);
    const dead = await nats.contents(dlq);
    expect(dead.map((m) => [m.data, m.headers['Weir-Sequence'], m.headers['Weir-Record']])).toEqual([
      ['{"i":1', '1', '1'],
      ['{"i":3},{"i":4}', '2', '0'],
    ]);
  });
});

// Unit tests of the barrier handling of multi-input operators. BarrierAligner is internal (not exported from 'weir'):
// it is imported from src/ here on purpose, because these scenarios need an exact interleaving of records, barriers,
// cancellation markers and watermarks on each input, which a job (whose sources all receive a barrier at once) cannot
// script precisely. The same behaviour is checked end to end through jobs in alignment.test.ts.
import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { CheckpointMode } from 'weir';
import { BarrierAligner, type InFlightRecord } from '../../src/task/barrierAligner';
import { CancelCheckpointMarker, CheckpointBarrier, Watermark, WatermarkStatus } from '../../src/core/elements';

type Event =
  | ['record', number, unknown]
  | ['aligned', number, { heldRecords: number }]
  | ['cancelled', number, string]
  | ['watermark', number]
  | ['idle', boolean]
  | ['complete'];

function harness(inputs: number, mode: CheckpointMode = 'exactly-once', alignedTimeout?: number) {
  const scheduler = new VirtualTimeScheduler();
  const log: Event[] = [];
  const inFlight = new Map<number, Promise<InFlightRecord[]>>();
  const aligner = new BarrierAligner(
    inputs,
    mode,
    {
      record: (input, value) => log.push(['record', input, value]),
      aligned: (barrier, records, stats) => {
        inFlight.set(barrier.id, records);
        log.push(['aligned', barrier.id, { heldRecords: stats.heldRecords }]);
      },
      cancelled: (id, reason) => log.push(['cancelled', id, reason]),
      watermark: (t) => log.push(['watermark', t]),
      idle: (idle) => log.push(['idle', idle]),
      complete: () => log.push(['complete']),
    },
    scheduler,
    alignedTimeout,
  );
  const barrier = (id: number) => new CheckpointBarrier(id, 0, false);
  return {
    log,
    scheduler,
    inFlight,
    record: (input: number, value: unknown) => aligner.push(input, value, undefined),
    barrier: (input: number, id: number) => aligner.push(input, barrier(id), undefined),
    cancel: (input: number, id: number) => aligner.push(input, new CancelCheckpointMarker(id), undefined),
    watermark: (input: number, t: number) => aligner.push(input, new Watermark(t), undefined),
    status: (input: number, idle: boolean) => aligner.push(input, new WatermarkStatus(idle), undefined),
    end: (input: number) => aligner.end(input),
    /** Takes and clears what happened so far. */
    take(): Event[] {
      return log.splice(0);
    },
  };
}

describe('BarrierAligner, exactly-once (Flink aligned checkpoints)', () => {
  it('holds the records of an input whose barrier came first, snapshots once every input sent it, then releases them in arrival order', () => {
    const h = harness(2);
    h.record(0, 'a1');
    h.record(1, 'b1');
    h.barrier(0, 1);
    h.record(0, 'a2'); // after barrier 1 on input 0: held
    h.record(1, 'b2'); // input 1 has not sent barrier 1: processed now, belongs to checkpoint 1
    h.record(0, 'a3');
    expect(h.take()).toEqual([
      ['record', 0, 'a1'],
      ['record', 1, 'b1'],
      ['record', 1, 'b2'],
    ]);
    h.barrier(1, 1);
    expect(h.take()).toEqual([
      ['aligned', 1, { heldRecords: 2 }],
      ['record', 0, 'a2'],
      ['record', 0, 'a3'],
    ]);
    h.record(0, 'a4');
    h.record(1, 'b3');
    expect(h.take()).toEqual([
      ['record', 0, 'a4'],
      ['record', 1, 'b3'],
    ]);
  });

  it('on 3 inputs, holds each input from its own barrier on, and releases the held records of all inputs in arrival order', () => {
    const h = harness(3);
    h.barrier(1, 1);
    h.record(1, 'b1');
    h.record(0, 'a1');
    h.barrier(2, 1);
    h.record(2, 'c1');
    h.record(1, 'b2');
    h.record(0, 'a2');
    expect(h.take()).toEqual([
      ['record', 0, 'a1'],
      ['record', 0, 'a2'],
    ]);
    h.barrier(0, 1);
    expect(h.take()).toEqual([
      ['aligned', 1, { heldRecords: 3 }],
      ['record', 1, 'b1'],
      ['record', 2, 'c1'],
      ['record', 1, 'b2'],
    ]);
  });

  it('holds watermarks of a blocked input with its records, in order', () => {
    const h = harness(2);
    h.watermark(0, 5);
    h.watermark(1, 5);
    h.barrier(0, 1);
    h.record(0, 'a');
    h.watermark(0, 10);
    h.watermark(1, 20);
    expect(h.take()).toEqual([['watermark', 5]]);
    h.barrier(1, 1);
    expect(h.take()).toEqual([
      ['aligned', 1, { heldRecords: 2 }],
      ['record', 0, 'a'],
      ['watermark', 10],
    ]);
  });

  it('aborts an alignment overtaken by a newer barrier as subsumed, releases what it held, and ignores the stale barrier', () => {
    const h = harness(2);
    h.barrier(0, 1);
    h.record(0, 'a1');
    h.barrier(0, 2); // checkpoint 2 overtakes 1 before input 1 delivered barrier 1
    expect(h.take()).toEqual([
      ['cancelled', 1, 'subsumed'],
      ['record', 0, 'a1'],
    ]);
    h.record(0, 'a2'); // held for checkpoint 2
    h.barrier(1, 1); // stale: checkpoint 1 is closed here
    h.record(1, 'b1');
    expect(h.take()).toEqual([['record', 1, 'b1']]);
    h.barrier(1, 2);
    expect(h.take()).toEqual([
      ['aligned', 2, { heldRecords: 1 }],
      ['record', 0, 'a2'],
    ]);
  });

  it('subsumes when the newer barrier arrives on the other input, and a 3-input alignment restarts for it', () => {
    const h = harness(3);
    h.barrier(0, 1);
    h.record(0, 'a1');
    h.barrier(1, 2);
    expect(h.take()).toEqual([
      ['cancelled', 1, 'subsumed'],
      ['record', 0, 'a1'],
    ]);
    h.record(1, 'b1'); // held for 2
    h.barrier(0, 2);
    h.barrier(2, 1); // stale
    h.record(2, 'c1');
    expect(h.take()).toEqual([['record', 2, 'c1']]);
    h.barrier(2, 2);
    expect(h.take()).toEqual([
      ['aligned', 2, { heldRecords: 1 }],
      ['record', 1, 'b1'],
    ]);
  });

  it('ignores a barrier older than the checkpoint being aligned', () => {
    const h = harness(2);
    h.barrier(0, 2);
    h.record(0, 'a1');
    h.barrier(1, 1); // older than 2: must not count as input 1 aligned for 2
    h.record(1, 'b1');
    expect(h.take()).toEqual([['record', 1, 'b1']]);
    h.barrier(1, 2);
    expect(h.take()).toEqual([
      ['aligned', 2, { heldRecords: 1 }],
      ['record', 0, 'a1'],
    ]);
  });

  it('a cancellation marker aborts the alignment, releases the held records, and later barriers of that checkpoint are ignored', () => {
    const h = harness(2);
    h.barrier(0, 1);
    h.record(0, 'a1');
    h.record(0, 'a2');
    h.cancel(1, 1);
    expect(h.take()).toEqual([
      ['cancelled', 1, 'cancelled'],
      ['record', 0, 'a1'],
      ['record', 0, 'a2'],
    ]);
    h.barrier(1, 1);
    h.record(0, 'a3');
    h.record(1, 'b1');
    expect(h.take()).toEqual([
      ['record', 0, 'a3'],
      ['record', 1, 'b1'],
    ]);
    // The next checkpoint aligns normally.
    h.barrier(1, 2);
    h.barrier(0, 2);
    expect(h.take()).toEqual([['aligned', 2, { heldRecords: 0 }]]);
  });

  it('passes on a cancellation marker for a checkpoint it is not aligning, once, and ignores its barriers after', () => {
    const h = harness(2);
    h.cancel(0, 1);
    h.cancel(1, 1);
    expect(h.take()).toEqual([['cancelled', 1, 'cancelled']]);
    h.barrier(0, 1);
    h.record(0, 'a');
    expect(h.take()).toEqual([['record', 0, 'a']]);
  });

  it('a cancellation marker for a newer checkpoint aborts the one aligning and closes both', () => {
    const h = harness(2);
    h.barrier(0, 1);
    h.record(0, 'a1');
    h.cancel(1, 2);
    const events = h.take();
    expect(events.filter((e) => e[0] === 'record')).toEqual([['record', 0, 'a1']]);
    expect(events.some((e) => e[0] === 'cancelled' && e[1] === 2)).toBe(true);
    h.barrier(0, 2);
    h.record(0, 'a2');
    h.barrier(1, 2);
    expect(h.take()).toEqual([['record', 0, 'a2']]);
  });

  it('counts an ended input as aligned, both for an alignment in progress and for later checkpoints', () => {
    const h = harness(3);
    h.barrier(0, 1);
    h.barrier(1, 1);
    h.record(0, 'a1');
    h.end(2);
    expect(h.take()).toEqual([
      ['aligned', 1, { heldRecords: 1 }],
      ['record', 0, 'a1'],
    ]);
    h.barrier(0, 2);
    h.record(0, 'a2');
    h.barrier(1, 2);
    expect(h.take()).toEqual([
      ['aligned', 2, { heldRecords: 1 }],
      ['record', 0, 'a2'],
    ]);
    h.end(0);
    h.end(1);
    expect(h.take()).toEqual([['complete']]);
  });

  it('combines watermarks as the minimum over inputs, never going back', () => {
    const h = harness(3);
    h.watermark(0, 10);
    h.watermark(1, 20);
    expect(h.take()).toEqual([]);
    h.watermark(2, 5);
    expect(h.take()).toEqual([['watermark', 5]]);
    h.watermark(2, 30);
    expect(h.take()).toEqual([['watermark', 10]]);
    h.watermark(0, 25);
    expect(h.take()).toEqual([['watermark', 20]]);
    h.watermark(1, 15); // not an advance of input 1: ignored
    expect(h.take()).toEqual([]);
  });

  it('leaves idle inputs out of the watermark, and an input that resumes cannot move it back', () => {
    const h = harness(2);
    h.watermark(0, 10);
    h.status(1, true);
    expect(h.take()).toEqual([['watermark', 10]]);
    h.watermark(0, 20);
    expect(h.take()).toEqual([['watermark', 20]]);
    h.status(0, true);
    expect(h.take()).toEqual([['idle', true]]);
    h.watermark(1, 5); // input 1 active again, behind the combined watermark
    expect(h.take()).toEqual([['idle', false]]);
    h.status(0, false);
    h.watermark(1, 25);
    expect(h.take()).toEqual([]); // min(20, 25) = 20, already emitted
    h.watermark(0, 30);
    expect(h.take()).toEqual([['watermark', 25]]);
  });

  it('an ended input no longer holds the watermark back', () => {
    const h = harness(2);
    h.watermark(0, 50);
    h.watermark(1, 10);
    expect(h.take()).toEqual([['watermark', 10]]);
    h.end(1);
    expect(h.take()).toEqual([['watermark', 50]]);
  });
});

describe('BarrierAligner, at-least-once', () => {
  it('holds nothing and snapshots when the last barrier arrives', () => {
    const h = harness(3, 'at-least-once');
    h.barrier(0, 1);
    h.record(0, 'a1');
    h.barrier(1, 1);
    h.record(1, 'b1');
    h.record(2, 'c1');
    expect(h.take()).toEqual([
      ['record', 0, 'a1'],
      ['record', 1, 'b1'],
      ['record', 2, 'c1'],
    ]);
    h.barrier(2, 1);
    expect(h.take()).toEqual([['aligned', 1, { heldRecords: 0 }]]);
  });
});

describe('BarrierAligner, unaligned after alignedTimeout', () => {
  it('lets the barrier overtake the held records once the alignment takes too long, and saves the records still before the barrier', async () => {
    const h = harness(2, 'exactly-once', 100);
    h.barrier(0, 1);
    h.record(0, 'a1');
    h.record(1, 'b1'); // before barrier 1 on input 1, during the aligned phase: processed, part of the snapshot
    h.scheduler.flush();
    expect(h.take()).toEqual([
      ['record', 1, 'b1'],
      ['aligned', 1, { heldRecords: 1 }],
      ['record', 0, 'a1'],
    ]);
    h.record(1, 'b2'); // in flight: after the snapshot, before barrier 1 on its input
    h.record(0, 'a2'); // after barrier 1 on its input: not held any more, not in flight
    h.record(1, 'b3');
    expect(h.take()).toEqual([
      ['record', 1, 'b2'],
      ['record', 0, 'a2'],
      ['record', 1, 'b3'],
    ]);
    h.barrier(1, 1);
    expect(h.take()).toEqual([]);
    expect(await h.inFlight.get(1)).toEqual([
      [1, 'b2', undefined],
      [1, 'b3', undefined],
    ]);
  });

  it('stays aligned when every barrier arrives within the timeout', async () => {
    const h = harness(2, 'exactly-once', 100);
    h.barrier(0, 1);
    h.record(0, 'a1');
    h.barrier(1, 1);
    h.scheduler.flush();
    expect(h.take()).toEqual([
      ['aligned', 1, { heldRecords: 1 }],
      ['record', 0, 'a1'],
    ]);
    expect(await h.inFlight.get(1)).toEqual([]);
  });
});

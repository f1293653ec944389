// A job definition for the browser worker tests: a keyed running sum over a split array whose splits each hold their
// own keys (so each key's running sums come in one order, and runs compare line for line), written by an
// exactly-once sink that publishes committed batches on a BroadcastChannel (the page hears it from any worker).
import { createJob, fromArray, fromSplits, keyBy, map, memoryCheckpointStorage, reduce, sinkTo, type Json, type Sink, type Source } from 'weir';
import { indexedDbCheckpointStorage, type JobModuleContext } from 'weir/browser';

export interface KeyedSumSettings {
  /** The job's name and the BroadcastChannel its output goes to. */
  name: string;
  records: number;
  keys: number;
  splits: number;
  /** An IndexedDB database to checkpoint to; 'memory'; absent: no checkpointing. */
  checkpoints?: string;
  interval?: number;
  chunkSize?: number;
  /** Throw at this record value (the test gives it to the first attempt's workers only). */
  failAt?: number;
  /** Loop for ever at this record value, a worker that hangs (the test gives it to the first attempt's workers only). */
  hangAt?: number;
  /** Each split stops after this many of its records until the page posts 'release' on `${name}-control`. */
  holdAfter?: number;
  /** Makes the sums queryable under this name. */
  queryable?: string;
}

/** A batch of output lines: a checkpoint's, published once it commits, or the last one ('end'). */
export interface Batch {
  batch: number | 'end';
  lines: string[];
}

/**
 * A two-phase sink: lines since the last barrier are pre-committed in the checkpoint and published when it
 * completes. A restored attempt publishes the restored pre-committed batches again; the reader keeps one per id.
 */
function broadcastSink(channel: string): Sink<string> {
  return {
    name: `broadcast(${channel})`,
    open: ({ restoredState }) => {
      const out = new BroadcastChannel(channel);
      let buffer: string[] = [];
      const pending = new Map<number, string[]>((restoredState as [number, string[]][] | undefined) ?? []);
      const publish = (batch: Batch) => out.postMessage(batch);
      for (const [batch, lines] of pending) publish({ batch, lines });
      pending.clear();
      return {
        write: (line) => void buffer.push(line),
        snapshot: (id) => {
          pending.set(id, buffer);
          buffer = [];
          return [...pending] as Json;
        },
        commit: (id) => {
          for (const [batch, lines] of pending) {
            if (batch > id) continue;
            publish({ batch, lines });
            pending.delete(batch);
          }
        },
        finish: () => {
          for (const [batch, lines] of pending) publish({ batch, lines });
          publish({ batch: 'end', lines: buffer });
          out.close();
        },
        abort: () => out.close(),
      };
    },
  };
}

/**
 * `records` in `splits` index ranges, as fromArray cuts them, whose readers each wait after `holdAfter` records of
 * their split, answering empty reads (so barriers pass and checkpoints complete), until the page releases them.
 */
function heldArray<T>(records: readonly T[], splits: number, holdAfter: number, channel: string): Source<T> {
  let released = false;
  const control = new BroadcastChannel(channel);
  control.onmessage = () => ((released = true), control.close());
  return fromSplits<T>(`held(${records.length} records)`, {
    list: () =>
      Array.from({ length: splits }, (_, k) => {
        const from = Math.floor((k * records.length) / splits);
        const to = Math.floor(((k + 1) * records.length) / splits);
        return { id: `[${from},${to})`, description: { from, to } };
      }),
    open: (split, { restoredOffset }) => {
      const { from, to } = split.description as { from: number; to: number };
      let next = typeof restoredOffset === 'number' ? restoredOffset : from;
      return {
        read: (max) => {
          if (next >= to) return null;
          if (!released && next >= from + holdAfter) return new Promise<T[]>((resolve) => setTimeout(() => resolve([]), 5));
          const end = Math.min(to, next + max, released ? to : from + holdAfter);
          const chunk = records.slice(next, end);
          next = end;
          return chunk;
        },
        offset: () => next,
      };
    },
  });
}

/** A user function that never returns: the worker's event loop never comes back, so it sends no heartbeat. */
function hang(): never {
  for (;;) {
    // spins for ever
  }
}

/** The definition the page and every worker build the job from. */
export function keyedSum(settings: KeyedSumSettings) {
  return ({ workers }: JobModuleContext) => {
    const storage =
      settings.checkpoints === undefined ? undefined : settings.checkpoints === 'memory' ? memoryCheckpointStorage() : indexedDbCheckpointStorage({ dbName: settings.checkpoints });
    const job = createJob({
      name: settings.name,
      ...(storage ? { checkpoints: { storage, ...(settings.interval ? { interval: settings.interval } : {}) } } : {}),
      restart: { strategy: 'fixed-delay', attempts: 3, delay: 0 },
      ...(settings.chunkSize ? { chunkSize: settings.chunkSize } : {}),
    });
    const perKey = settings.records / settings.keys;
    const records = Array.from({ length: settings.records }, (_, i) => ({ key: `k${Math.floor(i / perKey)}`, value: i }));
    const { failAt, hangAt } = settings;
    job
      .source(
        settings.holdAfter === undefined ? fromArray(records, { splits: settings.splits }) : heldArray(records, settings.splits, settings.holdAfter, `${settings.name}-control`),
        { uid: 'records' },
      )
      .pipe(
        map((record) => {
          if (record.value === failAt) throw new Error(`failing once at ${failAt} (of ${workers} workers)`);
          if (record.value === hangAt) hang();
          return record;
        }),
        keyBy((record) => record.key),
        reduce((a, b) => ({ key: a.key, value: a.value + b.value }), { uid: 'sum', ...(settings.queryable ? { queryable: settings.queryable } : {}) }),
        map((record) => `${record.key}=${record.value}`),
        sinkTo(broadcastSink(settings.name), { uid: 'out' }),
      );
    return job;
  };
}

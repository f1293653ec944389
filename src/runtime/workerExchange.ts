import type { Observable } from 'rxjs';
import {
  CancelCheckpointMarker,
  CheckpointBarrier,
  ControlElement,
  SideOutputElement,
  Watermark,
  WatermarkStatus,
  WATERMARK_ACTIVE,
  WATERMARK_IDLE,
  type RecordTimestamp,
  type StreamElement,
} from '../core/elements.js';
import type { CheckpointMode } from '../core/graph.js';
import { instanceOfKey } from '../core/keyGroups.js';
import type { Key, Scheduler } from '../core/types.js';
import { checkKey } from '../state/keyCodec.js';
import { alignedOutput } from '../task/alignerInputs.js';
import { AttemptBackpressure } from '../task/backpressure.js';
import { BarrierAligner } from '../task/barrierAligner.js';
import { DirectObservable, endOnce, subscribeTo } from '../task/directObservable.js';
import { workerOfSubtask, type Placement, type Route } from './placement.js';

/** One direction of the channel to another worker (a MessagePort's sending side). */
export interface ExchangePort {
  postMessage(message: unknown): void;
}

/**
 * What crosses between workers, as plain arrays (structured clone copies them cheaply): `[channel, kind, …]`.
 * Records go in batches with their timestamps; barriers, cancellation markers, watermarks, idleness and the end of
 * input travel in the same port as the records, so the port's FIFO order keeps every cut where it was made. A credit
 * (channel -1) gives back to the receiver's sender the records it took off its port.
 */
type Frame =
  | [channel: number, kind: typeof RECORDS, values: unknown[], timestamps: (number | undefined)[]]
  | [channel: number, kind: typeof BARRIER, id: number, timestamp: number, final: boolean, checkpointKind: 'checkpoint' | 'savepoint']
  | [channel: number, kind: typeof CANCEL, id: number]
  | [channel: number, kind: typeof WATERMARK, timestamp: number]
  | [channel: number, kind: typeof STATUS, idle: boolean]
  | [channel: number, kind: typeof END]
  | [channel: typeof NO_CHANNEL, kind: typeof CREDIT, records: number];

const RECORDS = 0;
const BARRIER = 1;
const CANCEL = 2;
const WATERMARK = 3;
const STATUS = 4;
const END = 5;
const CREDIT = 6;
const NO_CHANNEL = -1;

/** Records per batch at most: a batch is flushed at the end of a source chunk, or sooner when it gets this big. */
const MAX_BATCH = 4096;

/**
 * Records a worker may have sent to another that the other has not taken off its port yet (Flink's credits, counted
 * in records): past this, the sender's sources pause between chunks until credits come back below half of it. Some
 * sixteen batches: a receiver that keeps up never lets it fill; one that is slower bounds what its port buffers.
 */
const MAX_RECORDS_IN_FLIGHT = 16 * MAX_BATCH;

export interface WorkerExchangeOptions {
  readonly placement: Placement;
  /** The port to each other worker, by worker index (undefined at this worker's own index). */
  readonly ports: readonly (ExchangePort | undefined)[];
  readonly maxParallelism: number;
  readonly scheduler: Scheduler;
  readonly mode: CheckpointMode;
}

/** A gate's side that frames from other workers go to. */
interface GateInput {
  receive(from: number, frame: Frame): void;
}

/**
 * The exchange of one worker for one attempt (Flink's network stack between TaskManagers, on MessagePorts): every edge
 * into a node that does not run its records where they are gets a channel. On the sending side records are routed
 * (by key to the worker of their key's instance, or all to worker 0) and batched per worker; on the receiving side an
 * input gate reads the local flow and one input per other worker, aligns barriers over them with the job's
 * `BarrierAligner` and combines their watermarks by minimum, and ends when every input ended.
 *
 * Credit-based flow control: a receiver gives credits back for the records it took off its port, and a sender with
 * `MAX_RECORDS_IN_FLIGHT` records not given back to some worker raises its attempt's backpressure, which pauses its
 * sources between chunks (barriers still go in) until that worker caught up. A receiver gives credits on receipt,
 * whatever its own sources do, so two workers waiting on each other's credits cannot both be paused for good.
 */
export class WorkerExchange {
  /** The attempt's backpressure in this worker: the exchange raises it, the sources pause on it (see `Execution`). */
  readonly backpressure = new AttemptBackpressure();
  /** Records sent to each worker that it has not given credits back for yet. */
  private readonly inFlight: number[];
  /** The release of the backpressure raised for credits, while raised. */
  private releaseCredits: (() => void) | undefined;
  private readonly gates = new Map<number, GateInput>();
  /** Frames from other workers for a gate not subscribed yet (their sources may start before this worker's). */
  private readonly early = new Map<number, [number, Frame][]>();
  /** Frames waiting to be sent, by worker. */
  private readonly outgoing: Frame[][];
  private flushScheduled = false;

  constructor(private readonly options: WorkerExchangeOptions) {
    this.outgoing = options.ports.map(() => []);
    this.inFlight = options.ports.map(() => 0);
  }

  /** A message (a batch of frames) from worker `from`. */
  receive(from: number, message: unknown): void {
    let records = 0;
    for (const frame of message as Frame[]) {
      if (frame[1] === CREDIT) {
        this.credit(from, frame[2]);
        continue;
      }
      if (frame[1] === RECORDS) records += frame[2].length;
      const gate = this.gates.get(frame[0]);
      if (gate) gate.receive(from, frame);
      else {
        let early = this.early.get(frame[0]);
        if (!early) this.early.set(frame[0], (early = []));
        early.push([from, frame]);
      }
    }
    if (records > 0) {
      this.outgoing[from]!.push([NO_CHANNEL, CREDIT, records]);
      this.scheduleFlush();
    }
  }

  /** Credits back from worker `from`: the backpressure raised for credits ends once every worker is below half. */
  private credit(from: number, records: number): void {
    this.inFlight[from]! -= records;
    if (this.releaseCredits === undefined || this.inFlight.some((count) => count > MAX_RECORDS_IN_FLIGHT / 2)) return;
    this.releaseCredits();
    this.releaseCredits = undefined;
  }

  /**
   * The input of a node through channel `channel` (numbered alike in every worker): `input` is the local flow, which
   * is routed as `route` says, and what the other workers route here joins it. `record` is the attempt's event
   * timestamp slot: a record's timestamp crosses with it and is set there again on arrival.
   */
  gate(
    channel: number,
    route: Route,
    input: Observable<StreamElement<unknown>>,
    record: RecordTimestamp,
    decline: (id: number, by: number) => void,
  ): Observable<StreamElement<unknown>> {
    const { placement, scheduler, mode, maxParallelism } = this.options;
    const self = placement.worker;
    const target = this.router(route, maxParallelism);
    return new DirectObservable<StreamElement<unknown>>((observer) => {
      const subscriber = endOnce(observer);
      const aligner = new BarrierAligner(
        placement.workers,
        mode,
        alignedOutput(subscriber, decline, record),
        scheduler,
        undefined,
      );
      this.gates.set(channel, {
        receive(from, frame) {
          if (subscriber.closed) return;
          switch (frame[1]) {
            case RECORDS: {
              const [, , values, timestamps] = frame;
              for (let i = 0; i < values.length; i++) aligner.push(from, values[i], timestamps[i]);
              return;
            }
            case BARRIER:
              return aligner.push(from, new CheckpointBarrier(frame[2], frame[3], frame[4], frame[5]), undefined);
            case CANCEL:
              return aligner.push(from, new CancelCheckpointMarker(frame[2]), undefined);
            case WATERMARK:
              return aligner.push(from, new Watermark(frame[2]), undefined);
            case STATUS:
              return aligner.push(from, frame[2] ? WATERMARK_IDLE : WATERMARK_ACTIVE, undefined);
            case END:
              return aligner.end(from);
          }
        },
      });
      const early = this.early.get(channel) ?? [];
      this.early.delete(channel);
      const stop = subscribeTo(input, {
        next: (element) => {
          if (subscriber.closed) return;
          if (!(element instanceof ControlElement)) {
            const to = target(element);
            if (to === self) aligner.push(self, element, record.current);
            else this.send(to, channel, element, record.current);
            return;
          }
          // A side-output record is read only by `sideOutput(tag)`, which runs where the record was made: nothing
          // behind an exchange (a keyed operator, a sink) takes it.
          if (element instanceof SideOutputElement) return;
          this.broadcast(this.frameOf(channel, element));
          aligner.push(self, element, undefined);
        },
        dropsAfterEnd: true,
        error: (error) => subscriber.error(error),
        complete: () => {
          if (subscriber.closed) return;
          this.broadcast([channel, END]);
          aligner.end(self);
        },
      });
      for (const [from, frame] of early) this.gates.get(channel)!.receive(from, frame);
      return () => {
        subscriber.closed = true;
        this.gates.delete(channel);
        stop();
        aligner.dispose();
      };
    });
  }

  /** Which worker each record goes to. */
  private router(route: Route, maxParallelism: number): (value: unknown) => number {
    const { placement } = this.options;
    if (route.kind === 'first') return () => 0;
    if (route.kind === 'local') return () => placement.worker;
    const { selector, parallelism } = route;
    const select = selector as (value: unknown) => Key;
    // Hashing a key costs about as much as a keyed sum: once per distinct key.
    const workers = new Map<Key, number>();
    return (value) => {
      const key = select(value);
      let worker = workers.get(key);
      if (worker === undefined) {
        if (typeof key !== 'string') checkKey(key, 'exchange');
        worker = workerOfSubtask(instanceOfKey(key, parallelism, maxParallelism), placement);
        workers.set(key, worker);
      }
      return worker;
    };
  }

  private frameOf(channel: number, element: ControlElement): Frame {
    if (element instanceof CheckpointBarrier) return [channel, BARRIER, element.id, element.timestamp, element.final, element.kind];
    if (element instanceof CancelCheckpointMarker) return [channel, CANCEL, element.id];
    if (element instanceof Watermark) return [channel, WATERMARK, element.timestamp];
    if (element instanceof WatermarkStatus) return [channel, STATUS, element.idle];
    throw new TypeError(`weir: no wire form for ${element.constructor.name}`);
  }

  /** Appends a record to the batch for `to` on `channel`, flushed at the end of the chunk (a microtask later). */
  private send(to: number, channel: number, value: unknown, timestamp: number | undefined): void {
    const queue = this.outgoing[to]!;
    const last = queue[queue.length - 1];
    if (last !== undefined && last[0] === channel && last[1] === RECORDS) {
      last[2].push(value);
      last[3].push(timestamp);
      if (last[2].length >= MAX_BATCH) this.flush();
    } else {
      queue.push([channel, RECORDS, [value], [timestamp]]);
    }
    if (++this.inFlight[to]! > MAX_RECORDS_IN_FLIGHT && this.releaseCredits === undefined) this.releaseCredits = this.backpressure.raise();
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    queueMicrotask(() => this.flush());
  }

  /** A control frame to every other worker, after the records before it. */
  private broadcast(frame: Frame): void {
    const { placement } = this.options;
    for (let worker = 0; worker < placement.workers; worker++) if (worker !== placement.worker) this.outgoing[worker]!.push(frame);
    this.flush();
  }

  private flush(): void {
    this.flushScheduled = false;
    this.outgoing.forEach((queue, worker) => {
      if (queue.length === 0) return;
      this.options.ports[worker]!.postMessage(queue);
      this.outgoing[worker] = [];
    });
  }
}

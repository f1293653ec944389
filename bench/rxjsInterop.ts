import { filter as rxFilter, map as rxMap } from 'rxjs';
import { createJob, filter, forEach, fromArray, heapStateBackend, keyBy, map, reduce, type Flow } from 'weir';
import { addEvents, makeEvents, noop, perSecond, sideBySide, type KeyedEvent } from './measure';
import type { Result } from './report';

const EVENTS = 5_000_000;
const KEYS = 10_000;

// The user functions of both sides, unnamed as users pass them (`map((e) => …)`). A named one (`const double = …`)
// is what tsx, which runs the benches, renames with esbuild's keepNames: a defineProperty of `name` that turns the
// function into a dictionary-mode object. RxJS calls its callbacks as `project.call(thisArg, …)`, a property load
// that V8 then does through the generic LoadIC, per record and operator: ~190 instructions a record for map +
// filter (callgrind, production mode, 2 × 1M records: 7.61 G against 7.22 G), paid by the RxJS side only (weir calls
// `project(value)`), by no inline callback and by no code compiled without keepNames.
const [double, notThirds] = [(e: KeyedEvent): KeyedEvent => ({ key: e.key, n: e.n * 2 }), (e: KeyedEvent) => e.n % 3 !== 0];

/** A keyed weir pipeline (keyBy + reduce on the heap backend, checkpoints off) after `stateless`. Events per second. */
async function keyedPipeline(events: KeyedEvent[], stateless: (flow: Flow<KeyedEvent>) => Flow<KeyedEvent>): Promise<number> {
  const start = performance.now();
  const job = createJob({ name: 'bench-rxjs-interop', stateBackend: heapStateBackend() });
  stateless(job.source(fromArray(events), { uid: 'events' })).pipe(keyBy((e) => e.key), reduce(addEvents, { uid: 'sum' }), forEach(noop));
  await job.start().done;
  return perSecond(events.length, performance.now() - start);
}

/** The RxJS segment in `mode`: development mode (the closure-state check on) or production (`NODE_ENV`). */
async function inMode(mode: 'development' | 'production', run: () => Promise<number>): Promise<number> {
  const saved = process.env.NODE_ENV;
  process.env.NODE_ENV = mode;
  try {
    return await run();
  } finally {
    if (saved === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = saved;
  }
}

/**
 * rxjs `map` + `filter` inside a keyed weir pipeline against the same pipeline with weir's own `map` + `filter`,
 * alternating in this process: what running RxJS's operators as one rxjs chain per segment costs.
 */
export async function rxjsInterop(): Promise<Result[]> {
  const events = makeEvents(EVENTS, KEYS);
  const rx = (flow: Flow<KeyedEvent>) => flow.pipe(rxMap(double), rxFilter(notThirds));
  const best = await sideBySide(
    {
      weir: () => keyedPipeline(events, (flow) => flow.pipe(map(double), filter(notThirds))),
      rxDevelopment: () => inMode('development', () => keyedPipeline(events, rx)),
      rxProduction: () => inMode('production', () => keyedPipeline(events, rx)),
    },
    { rounds: 3, best: 'max' },
  );
  return [
    { name: 'rxjs-interop/weir-map-filter', value: best.weir, unit: 'events/s' },
    { name: 'rxjs-interop/rx-map-filter', value: best.rxDevelopment, unit: 'events/s' },
    { name: 'rxjs-interop/rx-map-filter-production', value: best.rxProduction, unit: 'events/s' },
    { name: 'rxjs-interop/map-filter-weir-pipe-vs-rx', value: best.rxDevelopment / best.weir, unit: 'ratio', bar: { op: '>=', value: 0.8 } },
    { name: 'rxjs-interop/map-filter-weir-pipe-vs-rx-production', value: best.rxProduction / best.weir, unit: 'ratio', bar: { op: '>=', value: 0.8 } },
  ];
}

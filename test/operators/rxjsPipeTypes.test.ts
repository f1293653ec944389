// Flow.pipe types RxJS operators mixed with weir's: an RxJS operator's result is a flow of its records (tsc checks
// this file; the runs check that the types describe what comes out).
import { type Observable, filter as rxFilter, map as rxMap, mergeMap, of, toArray } from 'rxjs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { asObservable, collect, createJob, fromArray, keyBy, map, reduce, uncheckpointed, type Flow, type KeyedFlow } from 'weir';

describe('Flow.pipe with RxJS operators', () => {
  it('types an RxJS operator on a flow as a flow of its output, before and after weir operators', async () => {
    const job = createJob({ name: 'types' });
    const numbers = job.source(fromArray([1, 2, 3]), { uid: 'in' });
    const labels = numbers.pipe(rxMap((n) => `#${n}`));
    expectTypeOf(labels).toEqualTypeOf<Flow<string>>();
    const lengths = numbers.pipe(rxMap((n) => `${n * 10}`), map((s) => s.length), rxFilter((n) => n > 1));
    expectTypeOf(lengths).toEqualTypeOf<Flow<number>>();
    const keyed = numbers.pipe(keyBy((n) => (n % 2 === 0 ? 'even' : 'odd')));
    expectTypeOf(keyed).toEqualTypeOf<KeyedFlow<number>>();
    // After keyBy, an RxJS operator gives a plain flow: it may change what the key selector reads.
    const doubled = keyed.pipe(mergeMap((n) => of(n, n * 10)), rxMap((n) => ({ n })));
    expectTypeOf(doubled).toEqualTypeOf<Flow<{ n: number }>>();
    const sums = numbers.pipe(keyBy(() => 'all'), reduce((a, b) => a + b, { uid: 'sum' }), rxMap((sum) => ({ sum })));
    expectTypeOf(sums).toEqualTypeOf<Flow<{ sum: number }>>();
    const arrays = numbers.pipe(uncheckpointed(toArray()), map((all) => all.length));
    expectTypeOf(arrays).toEqualTypeOf<Flow<number>>();
    // Leaving weir stays an Observable.
    const out$ = numbers.pipe(rxMap((n) => n + 1), asObservable());
    expectTypeOf(out$).toExtend<Observable<number>>();
    const out = collect<number>();
    const seen: number[] = [];
    out$.subscribe((n) => seen.push(n));
    lengths.pipe(out.sink());
    await job.start().done;
    expect(out.values).toEqual([2, 2, 2]);
    expect(seen).toEqual([2, 3, 4]);
  });
});

// A fan-out hands each record to its consumers by the quickest input each has: a weir consumer's `nextRecord`, an
// RxJS subscriber's `next` (called as the subscriber's method: it reads its own state).
import { map as rxMap } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { DirectObservable, type DirectObserver } from '../../src/task/directObservable';
import { fanOut } from '../../src/task/fanOut';

describe('a fan-out read by a weir consumer and an RxJS subscriber', () => {
  it('gives both every record, in order, and the end', () => {
    let upstream: DirectObserver<number> | undefined;
    const fanned = fanOut(
      new DirectObservable<number>((observer) => {
        upstream = observer;
        return () => undefined;
      }),
    );
    const direct: string[] = [];
    fanned.subscribeDirect({
      next: (value) => direct.push(`next ${value}`),
      nextRecord: (value) => direct.push(`record ${value}`),
      error: (error: unknown) => direct.push(`error ${String(error)}`),
      complete: () => direct.push('complete'),
      dropsAfterEnd: true,
    });
    const viaRxjs: string[] = [];
    fanned.pipe(rxMap((n) => n * 10)).subscribe({ next: (value) => viaRxjs.push(`${value}`), complete: () => viaRxjs.push('complete') });
    upstream!.nextRecord!(1);
    upstream!.nextRecord!(2);
    upstream!.complete();
    expect(direct).toEqual(['record 1', 'record 2', 'complete']);
    expect(viaRxjs).toEqual(['10', '20', 'complete']);
  });
});

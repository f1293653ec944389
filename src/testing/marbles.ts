import type { Observable } from 'rxjs';
import type { RunHelpers, TestScheduler } from 'rxjs/testing';
import { harness, type Harness } from './harness.js';
import type { Fragment, HarnessOptions } from './harnessOptions.js';

/** What a marble test's body gets: RxJS's run helpers, the harness, and weir's two expectations. */
export interface MarbleHelpers<I, R> extends RunHelpers {
  readonly harness: Harness<I, R>;
  /**
   * Feeds the fragment from `inputs` (one Observable per input, of `record(value, ts)`, bare values, `watermark(t)`,
   * `barrier(id)`, `cancelMarker(id)`) and expects its output to be the marble diagram: records as
   * `record(value, ts)`, watermarks (`{ watermarks: true }`) and barriers leaving the fragment (`{ barriers: true }`).
   */
  expectOutput(
    inputs: Observable<unknown> | Observable<unknown>[],
    options?: { watermarks?: boolean; barriers?: boolean },
  ): { toBe(marbles: string, values?: Record<string, unknown>, error?: unknown): void };
  /**
   * Expects, once the marbles ran and the checkpoints they started were persisted, exactly these checkpoints to have
   * completed (ids, ascending). Checked after `TestScheduler.run` returns, since persisting is asynchronous.
   */
  expectCompleted(ids: number[]): void;
}

/**
 * Runs a marble test of a pipeline fragment on an RxJS `TestScheduler`, which is also the fragment's processing-time
 * clock: one frame is one millisecond. Resolves with the harness, to look further (state, late data, snapshots).
 * @example
 * const testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
 * await marbles(testScheduler, perKeySum, ({ cold, expectOutput, expectCompleted }) => {
 *   const input = cold('a-b-w-B|', { a: record(ev('k', 1), 1000), b: record(ev('k', 2), 2000), w: watermark(2999), B: barrier(1) });
 *   expectOutput(input).toBe('----x--|', { x: record(ev('k', 3), 2999) });
 *   expectCompleted([1]);
 * });
 */
export async function marbles<I, R>(
  scheduler: TestScheduler,
  fragment: Fragment<I, R>,
  body: (helpers: MarbleHelpers<I, R>) => void,
  options: Omit<HarnessOptions, 'scheduler'> = {},
): Promise<Harness<I, R>> {
  const h = await harness(fragment, { checkpointTimeout: Number.POSITIVE_INFINITY, ...options, scheduler });
  let completed: number[] | undefined;
  scheduler.run((helpers) =>
    body({
      ...helpers,
      harness: h,
      expectOutput: (inputs, outputOptions) => ({
        toBe: (marble, values, error) => helpers.expectObservable(h.drive(inputs, outputOptions)).toBe(marble, values, error),
      }),
      expectCompleted: (ids) => void (completed = ids),
    }),
  );
  await h.settle();
  if (completed) scheduler.assertDeepEqual(h.completedSnapshots().map((snapshot) => snapshot.id), completed);
  return h;
}

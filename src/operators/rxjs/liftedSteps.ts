import type { Observable } from 'rxjs';
import type { LiftedOperator } from '../../core/flow.js';

/** One RxJS operator of a segment, as `Flow.lift` received it, and whether the closure-state check covers it. */
export interface LiftedStep {
  readonly operator: LiftedOperator;
  /** False when the user accepted that its closure state restarts empty (`uncheckpointed`). */
  readonly checked: boolean;
}

/**
 * `steps` applied to `source`, each lifted onto the Observable before it, as RxJS's own `pipe` applies them: every
 * subscription of the result runs fresh instances of the operators, with their own closure state.
 */
export function applySteps(source: Observable<unknown>, steps: readonly LiftedStep[]): Observable<unknown> {
  return steps.reduce((observable, step) => observable.lift(step.operator), source);
}

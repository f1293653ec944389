import { JobDefinitionError } from '../../core/errors.js';
import { registerLift, type Flow, type LiftedOperator } from '../../core/flow.js';
import { WindowedFlow } from '../../windows/windowedFlow.js';
import { operate } from '../operate.js';
import { RxjsSegment } from './rxjsSegment.js';
import { isUncheckpointed } from './uncheckpointed.js';

/** Adds an RxJS operator to a flow's graph (see RxjsSegment); a keyed flow gives a plain one, as `Flow.lift` says. */
function liftRxjs(input: Flow<unknown>, operator: LiftedOperator): Flow<unknown> {
  if (input instanceof WindowedFlow) {
    throw new JobDefinitionError(
      `job '${input.graph.jobName}': an RxJS operator cannot read a windowed flow; apply a window function (reduce, aggregate, process) after window() first`,
    );
  }
  return operate(input, new RxjsSegment([{ operator, checked: !isUncheckpointed() }]));
}

registerLift(liftRxjs);

import type { SchedulerLike } from 'rxjs';
import { CancelCheckpointMarker, CheckpointBarrier, ControlElement } from '../core/elements.js';
import type { CheckpointMode } from '../core/graph.js';
import { BarrierAligner } from '../task/barrierAligner.js';
import type { HeldRecord } from './harnessOptions.js';

/**
 * Which records a multi-input operator holds while it aligns a checkpoint's barriers: a shadow of that alignment
 * (the same `BarrierAligner`, fed what the harness's inputs are fed) that forgets a record once it would be released.
 */
export class HeldRecords {
  private readonly shadow: BarrierAligner;
  /** In arrival order; a record leaves once the shadow releases it. */
  private readonly records: HeldRecord[] = [];

  constructor(inputs: number, mode: CheckpointMode, scheduler: SchedulerLike, alignedTimeout: number | undefined) {
    this.shadow = new BarrierAligner(
      inputs,
      mode,
      {
        record: (_input, entry) => {
          const index = this.records.indexOf(entry as HeldRecord);
          if (index >= 0) this.records.splice(index, 1);
        },
        aligned: () => undefined,
        cancelled: () => undefined,
        watermark: () => undefined,
        idle: () => undefined,
        complete: () => undefined,
      },
      scheduler,
      alignedTimeout,
    );
  }

  /** What `input` is fed: a record (held until the shadow releases it), or a barrier or cancellation marker. */
  push(input: number, element: unknown, timestamp: number | undefined): void {
    if (!(element instanceof ControlElement)) {
      const entry: HeldRecord = { input, value: element, timestamp };
      this.records.push(entry);
      this.shadow.push(input, entry, timestamp);
    } else if (element instanceof CheckpointBarrier || element instanceof CancelCheckpointMarker) {
      this.shadow.push(input, element, undefined);
    }
  }

  end(input: number): void {
    this.shadow.end(input);
  }

  held(): HeldRecord[] {
    return [...this.records];
  }
}

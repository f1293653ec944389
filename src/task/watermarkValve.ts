/** Where a valve sends what it combined. */
export interface ValveOutput {
  /** The combined watermark advanced. */
  watermark(timestamp: number): void;
  /** Every input became idle, or one became active again. */
  idle(idle: boolean): void;
}

/**
 * The watermark of an operator with several inputs (Flink's StatusWatermarkValve): the minimum over the inputs that
 * are neither idle nor ended, sent on only when it advances. An input's watermark that does not advance its own is
 * dropped; an idle input does not hold the others back, and a watermark from it makes it active again.
 */
export class WatermarkValve {
  private readonly watermarks: number[];
  private readonly idleInputs: boolean[];
  private readonly ended: boolean[];
  private emitted = Number.NEGATIVE_INFINITY;
  private allIdle = false;

  constructor(
    private readonly inputs: number,
    private readonly output: ValveOutput,
  ) {
    this.watermarks = new Array<number>(inputs).fill(Number.NEGATIVE_INFINITY);
    this.idleInputs = new Array<boolean>(inputs).fill(false);
    this.ended = new Array<boolean>(inputs).fill(false);
  }

  watermark(input: number, timestamp: number): void {
    if (timestamp <= this.watermarks[input]!) return;
    this.watermarks[input] = timestamp;
    if (this.idleInputs[input]) this.status(input, false);
    else this.update();
  }

  status(input: number, idle: boolean): void {
    this.idleInputs[input] = idle;
    const allIdle = this.idleInputs.every((value, i) => value || this.ended[i]);
    if (allIdle !== this.allIdle) {
      this.allIdle = allIdle;
      this.output.idle(allIdle);
    }
    this.update();
  }

  /** `input` reached its end: it no longer holds back the watermark. */
  end(input: number): void {
    this.ended[input] = true;
    this.update();
  }

  private update(): void {
    let minimum = Number.POSITIVE_INFINITY;
    let active = false;
    for (let i = 0; i < this.inputs; i++) {
      if (this.ended[i] || this.idleInputs[i]) continue;
      active = true;
      minimum = Math.min(minimum, this.watermarks[i]!);
    }
    if (!active) {
      // All idle: event time stands still. All ended: each sent the end-of-input watermark.
      if (!this.ended.every(Boolean)) return;
      minimum = Math.max(...this.watermarks);
    }
    if (minimum > this.emitted && Number.isFinite(minimum)) {
      this.emitted = minimum;
      this.output.watermark(minimum);
    }
  }
}

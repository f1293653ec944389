import type { SourceReader } from '../core/types.js';

/** A reader that makes records `[index, end)` by calling `generate(index)`: its offset is the next index. */
export class GeneratorReader<T> implements SourceReader<T> {
  constructor(
    private readonly generate: (index: number) => T,
    /** The index of the next record: the offset. */
    private index: number,
    /** The index after the last record to make: the end of a split, or the count. */
    private readonly end: number,
  ) {}

  read(max: number): T[] | null {
    if (this.index >= this.end) return null;
    const stop = Math.min(this.index + max, this.end);
    const chunk = new Array<T>(stop - this.index);
    for (let i = 0; this.index < stop; i++) chunk[i] = this.generate(this.index++);
    return chunk;
  }

  offset(): number {
    return this.index;
  }

  lag(): number {
    return this.end - this.index;
  }
}

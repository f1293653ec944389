/**
 * An async generator over the items of batches (arrays) that an async generator yields: stepping through a batch
 * costs a resolved promise per item, not the rounds of awaits an async generator's `yield` takes, which over a
 * million entries is most of the time a reader spends.
 */
export class BatchedGenerator<T> implements AsyncGenerator<T, void, undefined> {
  private batch: T[] = [];
  private at = 0;
  private finished = false;
  private loading: Promise<void> | undefined;

  constructor(private readonly batches: AsyncGenerator<T[], void, undefined>) {}

  next(): Promise<IteratorResult<T, void>> {
    if (this.at < this.batch.length) return Promise.resolve({ value: this.batch[this.at++]!, done: false });
    if (this.finished) return Promise.resolve({ value: undefined, done: true });
    this.loading ??= this.load().finally(() => (this.loading = undefined));
    return this.loading.then(() => this.next());
  }

  private async load(): Promise<void> {
    this.batch = [];
    this.at = 0;
    try {
      const result = await this.batches.next();
      if (result.done) this.finished = true;
      else this.batch = result.value;
    } catch (error) {
      this.finished = true;
      throw error;
    }
  }

  async return(): Promise<IteratorResult<T, void>> {
    this.finish();
    await this.batches.return(undefined);
    return { value: undefined, done: true };
  }

  async throw(error: unknown): Promise<IteratorResult<T, void>> {
    this.finish();
    await this.batches.return(undefined);
    throw error;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private finish(): void {
    this.finished = true;
    this.batch = [];
    this.at = 0;
  }
}

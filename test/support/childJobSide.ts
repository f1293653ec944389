// The child-process side of the kill tests (test/support/childJob.ts is the parent's): the busy work that makes a
// run last long enough to be killed mid-way, and the lines a child prints for its parent.

/** Where the busy work's result goes, so that the JIT cannot drop the loop. */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- written, never read: that is the point
let checksum = 0;

/**
 * Stands in for real per-record work (parsing, enrichment): `rounds` steps of a hash over `event.user`, then the
 * event itself.
 */
export function busyWork<E extends { user: string }>(rounds: number): (event: E) => E {
  return (event) => {
    let hash = 0;
    for (let i = 0; i < rounds; i++) hash = (Math.imul(hash, 31) + event.user.charCodeAt(i % event.user.length)) | 0;
    checksum ^= hash;
    return event;
  };
}

/**
 * Reports a run to the parent: its result as one JSON line once done (then exits when `exit`, for a job whose clients
 * keep the event loop alive), or the error on stderr and exit code 1.
 */
export function reportRun(done: Promise<{ restoredFrom?: string; checkpoints: readonly unknown[] }>, { exit = false } = {}): void {
  done.then(
    (result) => {
      process.stdout.write(`${JSON.stringify({ restoredFrom: result.restoredFrom ?? null, checkpoints: result.checkpoints.length })}\n`);
      if (exit) process.exit(0);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}

import type { ObjectResult } from '@nats-io/obj';

/** How long a read waits for its next chunk before it asks whether the object is still whole. */
const STALL_MS = 1000;

/**
 * An Object Store object's bytes, read from `result` (`os.get(name)`), chunk by chunk. Why not `getBlob`: its consumer
 * waits for ever on chunks that are not there, and an object can lose them while it is read (a member's retention
 * removes the checkpoint that a status read or a purge is reading; under load that took `weir inspect --group` into a
 * hang). So whenever no chunk came for a second, `whole()` asks the server whether it still holds every chunk of the
 * object; when it does not, the read stops (its consumer with it) and ends with what `removed()` makes.
 */
export async function readObjectChunks(result: ObjectResult, whole: () => Promise<boolean>, removed: () => Error): Promise<Uint8Array> {
  const reader = result.data.getReader();
  // The client also rejects `error` when the stream fails (a digest that does not match): the read reports it once.
  const failed = result.error.then(
    () => undefined,
    (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
  );
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const next = reader.read();
    let step = await withinStall(next);
    while (step === undefined) {
      if (!(await whole())) {
        await reader.cancel().catch(() => undefined);
        throw removed();
      }
      step = await withinStall(next);
    }
    if (step.done) break;
    parts.push(step.value);
    size += step.value.length;
  }
  const error = await failed;
  if (error !== undefined) throw error;
  const data = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    data.set(part, at);
    at += part.length;
  }
  return data;
}

/** What `next` gives, or undefined when it has not settled within `STALL_MS`. */
async function withinStall<T>(next: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), STALL_MS)));
  try {
    return await Promise.race([next, stalled]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves on a later macrotask, so that timers, I/O and checkpoint persistence run between two source chunks.
 * A microtask (a resolved promise) would not let them in. `setImmediate` in Node; a `MessageChannel` in browsers,
 * where `setTimeout(0)` is clamped to 4 ms after a few nested calls.
 */
const hasSetImmediate = typeof setImmediate === 'function';

/**
 * Records a source reads between two yields, unless the job sets `chunkSize`: 1024 in Node, where a yield
 * (`setImmediate`) costs about a microsecond, 4096 in browsers, where a `MessageChannel` round trip costs ~10 µs and
 * at 1024 took ~20% of a keyed reduce's time in Chromium. Either way a chunk is well under a millisecond of work, so
 * barriers, timers and I/O still get in often.
 */
export const DEFAULT_CHUNK_SIZE = hasSetImmediate ? 1024 : 4096;

export const yieldToEventLoop: () => Promise<void> = (() => {
  if (hasSetImmediate) return () => new Promise<void>((resolve) => setImmediate(resolve));
  const channel = new MessageChannel();
  const waiting: (() => void)[] = [];
  channel.port1.onmessage = () => waiting.shift()?.();
  return () =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      channel.port2.postMessage(null);
    });
})();

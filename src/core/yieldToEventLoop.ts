/**
 * Resolves on a later macrotask, so that timers, I/O and checkpoint persistence run between two source chunks.
 * A microtask (a resolved promise) would not let them in. `setImmediate` in Node; a `MessageChannel` in browsers,
 * where `setTimeout(0)` is clamped to 4 ms after a few nested calls.
 */
export const yieldToEventLoop: () => Promise<void> = (() => {
  if (typeof setImmediate === 'function') return () => new Promise<void>((resolve) => setImmediate(resolve));
  const channel = new MessageChannel();
  const waiting: (() => void)[] = [];
  channel.port1.onmessage = () => waiting.shift()?.();
  return () =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      channel.port2.postMessage(null);
    });
})();

import { CheckpointCorruptedError } from '../core/errors.js';
import type { StateClock, StateDescriptor, StateMeta } from '../core/types.js';
import { decodeRestored, restoredDecoder } from '../state/stateChecks.js';
import { resolveTtl, ttlNow } from '../state/ttl/ttlConfig.js';
import { splitStamped, stamp, ttlSerializer } from '../state/ttl/ttlDescriptor.js';
import { serializerById } from './serializerById.js';

// How the State Processor API decodes the values of a saved state and encodes the values it writes, TTL stamps included.

/**
 * How values of a saved state are decoded: the descriptor's way, a built-in serializer's, or not at all. A TTL state's
 * values come without their access times, as the job reads them; expired ones too, as nothing here tells the time
 * the TTL runs on.
 */
export function valueDecoder(meta: StateMeta, descriptor?: StateDescriptor<unknown>): (encoded: unknown) => unknown {
  const serializer = serializerById(meta.serializer);
  const decode = descriptor
    ? restoredDecoder(meta, descriptor)
    : serializer
      ? (encoded: unknown) => decodeRestored(serializer, encoded, meta)
      : (encoded: unknown) => encoded;
  if (!meta.ttl) return decode;
  return (encoded) => {
    const stamped = splitStamped(encoded);
    if (stamped === undefined) {
      throw new CheckpointCorruptedError(
        `state '${meta.name}' was saved with a TTL, but a saved value is not stored with its access time; the savepoint is damaged or was written by other code`,
      );
    }
    return decode(stamped[0]);
  };
}

/**
 * How `withKeyedState` encodes values of `descriptor`: as a job's backend stores them. A state with a TTL is stored
 * stamped (see `storedDescriptor`), every value last accessed at one time, taken when the state is added.
 */
export function valueEncoder<V>(descriptor: StateDescriptor<unknown, V>, clock: StateClock): (value: V) => unknown {
  const { serializer, kind, ttl } = descriptor;
  if (ttl === undefined) return (value) => serializer.encode(value);
  const stored = ttlSerializer(serializer, kind);
  const now = ttlNow(clock, resolveTtl(ttl));
  return (value) => stored.encode(stamp(kind, value, now));
}

/**
 * The last-access times of a TTL state's value rewritten offline, from those it was saved with (`EncodedStamped`):
 * rewriting is no access. A list or map keeps one time per element while its length stays (elements keep their
 * order); otherwise each element gets the latest of the saved times.
 */
export function restamp(saved: number | number[], value: unknown): number | number[] {
  if (typeof saved === 'number') return saved;
  const length = Array.isArray(value) ? value.length : value instanceof Map ? value.size : saved.length;
  return length === saved.length ? saved : new Array<number>(length).fill(Math.max(...saved));
}

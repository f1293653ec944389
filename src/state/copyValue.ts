/**
 * A private copy of a state value that may be mutated in place, for copy-on-write while a snapshot still needs the
 * original. Plain objects, arrays, Maps, Sets and Dates are deep-copied; anything else (class instances, whose
 * prototype a structured clone would lose) is shared, and must be replaced through `update` rather than mutated.
 */
export function copyValue<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  const proto = Object.getPrototypeOf(value);
  const cloneable =
    proto === Object.prototype || proto === null || Array.isArray(value) || value instanceof Map || value instanceof Set || value instanceof Date;
  if (!cloneable) return value;
  try {
    return structuredClone(value);
  } catch {
    return value;
  }
}

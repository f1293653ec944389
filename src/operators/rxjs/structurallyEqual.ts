/**
 * Whether two emitted values are structurally equal, for the closure-state check: primitives by `Object.is`, arrays
 * and plain or class objects by their own enumerable keys and prototype, `Date`s by time, `Map`s and `Set`s by
 * entries in order (the same operator given the same record builds them in the same order). Local rather than a
 * package: the only well-kept one (fast-deep-equal) is CommonJS, which every browser bundler of weir would have to
 * pre-bundle (Vite's dev server reloads the page when it meets a new one).
 */
export function structurallyEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (a instanceof Date) return a.getTime() === (b as Date).getTime();
  if (a instanceof Map || a instanceof Set) return structurallyEqual([...a], [...(b as Map<unknown, unknown> | Set<unknown>)]);
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => structurallyEqual(item, other[i]));
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && structurallyEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}

import superjson from 'superjson';

/**
 * Rich state values set aside from a state file, for storages that keep structured-clone values beside the bytes
 * (IndexedDB clones Map, Set, Date and BigInt natively, ~5× faster than superjson + JSON for such values). While a
 * snapshot piece is materialised inside `settingAside`, `autoSerializer` writes each value that is not plain JSON as
 * `{ "$weir.aside": index }` and puts the value itself in the list; the storage stores the list with the file, and
 * reading the file back turns each marker into a `SetAsideValue`, which `autoSerializer` decodes to the value. Plain
 * JSON values and every other file are untouched; savepoints never set values aside, so they stay self-contained.
 */

/** The marker's key. `autoSerializer` treats an object owning it as not plain JSON, so its own values never look like markers. */
export const ASIDE = '$weir.aside';

let collecting: unknown[] | undefined;

/** Runs `materialize` with rich values set aside into `values` (in the order their markers number them). */
export function settingAside<T>(values: unknown[], materialize: () => T): T {
  const outer = collecting;
  collecting = values;
  try {
    return materialize();
  } finally {
    collecting = outer;
  }
}

/** `autoSerializer`'s hook: the marker for a rich value when values are being set aside, else undefined. */
export function setAside(value: unknown): { [ASIDE]: number } | undefined {
  return collecting === undefined ? undefined : { [ASIDE]: collecting.push(value) - 1 };
}

/** A value that was set aside, read back with its file: what `autoSerializer` decodes to `value`. */
export class SetAsideValue {
  constructor(readonly value: unknown) {}

  /** Written into a file again (a savepoint derived from a checkpoint, the inspector's sizes): superjson, as `autoSerializer` writes it inline. */
  toJSON(): unknown {
    return { $superjson: superjson.serialize(this.value) };
  }
}

/** A `JSON.parse` reviver that replaces each marker with the value it stands for from `values`. */
export function revivingSetAside(values: readonly unknown[]): (key: string, value: unknown) => unknown {
  return (_key, value) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    const index = (value as Record<string, unknown>)[ASIDE];
    if (typeof index !== 'number' || Object.keys(value).length !== 1) return value;
    if (!(Number.isInteger(index) && index >= 0 && index < values.length)) throw new RangeError(`a set-aside value marker points at #${index}, past the ${values.length} stored with the file`);
    return new SetAsideValue(values[index]);
  };
}

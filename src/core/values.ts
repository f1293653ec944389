// Keys and JSON values: the data every other contract speaks of.

/** A key of a keyed flow. Keys are compared by value (JavaScript `Map` semantics), so they must be primitives. */
export type Key = string | number | boolean | bigint;

/** A JSON value: what offsets and operator state are made of. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

import type { Database } from 'lmdb';
import type { Key } from '../../core/types.js';
import type { KeyWriter } from './keyEncoding.js';

/** The working database of one LMDB keyed backend: binary keys (see `keyEncoding`), msgpack-encoded values. */
export type StateDatabase = Database<unknown, Buffer>;

/** What the tables and state objects of an LMDB keyed backend need from it. */
export interface RowStore {
  readonly db: StateDatabase;
  readonly keys: KeyWriter;
  /** The current namespace (`''`: not scoped to a window). */
  readonly namespace: string;
  /** The current key, or `NoKeyedContextError` naming the state. */
  currentKey(stateName: string): Key;
  /** The key's key group; computed once per current key, not once per access. */
  keyGroup(key: Key): number;
  /** Counts one buffered write; past a bound, writes every buffered row in one transaction. */
  wrote(): void;
}

import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV, KvEntry } from '@nats-io/kv';

/** A group's KV bucket, with the stream API its listings go through. */
export interface ListableBucket {
  readonly kv: KV;
  /** The bucket's name (its stream is `KV_<name>`). */
  readonly name: string;
  readonly jsm: JetStreamManager;
}

/**
 * The current entries of `bucket` whose keys match `filter` (a KV key pattern such as `members.*`), in key order;
 * deleted, purged and expired keys are left out. The keys come from the subject index of the bucket's stream, one
 * request that leaves nothing on the server: the client's `keys()` opens a consumer per call that the server keeps for
 * five minutes, and called at every member round and status read, hundreds of them slowed the server until members
 * renewed their leases too late and were fenced (issue 22).
 */
export async function kvEntries(bucket: ListableBucket, filter: string): Promise<Map<string, KvEntry>> {
  const prefix = `$KV.${bucket.name}.`;
  const info = await bucket.jsm.streams.info(`KV_${bucket.name}`, { subjects_filter: `${prefix}${filter}` });
  const keys = Object.keys(info.state.subjects ?? {})
    .map((subject) => subject.slice(prefix.length))
    .sort();
  const entries = await Promise.all(keys.map((key) => bucket.kv.get(key)));
  const found = new Map<string, KvEntry>();
  keys.forEach((key, i) => {
    const entry = entries[i];
    if (entry?.operation === 'PUT') found.set(key, entry);
  });
  return found;
}

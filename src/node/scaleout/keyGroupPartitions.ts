import { JobDefinitionError } from '../../core/errors.js';
import { DEFAULT_MAX_PARALLELISM, keyGroupOf } from '../../core/keyGroups.js';
import type { Key, KeyGroupRange } from '../../core/types.js';

export interface KeyGroupPartitionsOptions {
  /** The first subject token(s), e.g. `'weir'`; a JetStream stream captures `<prefix>.<topic>.*`. */
  prefix: string;
  /** The partitioned topic's name: one subject token. */
  topic: string;
  /** The job's number of key groups (its max parallelism); 128 by default, as the job's. */
  maxParallelism?: number;
}

/** The partition subjects of one topic: one subject per key group, `<prefix>.<topic>.<keyGroup>`. */
export interface KeyGroupPartitions {
  readonly maxParallelism: number;
  /** The subject filter a stream captures the topic with: `<prefix>.<topic>.*`. */
  readonly streamSubject: string;
  /** The partition subject of a key group. */
  subject(keyGroup: number): string;
  /** The partition subject of a key: that of its key group, by weir's own key-group function. */
  subjectOfKey(key: Key): string;
  /** A sink's `subject` function: each record goes to the partition of the key `keyOf` reads from it. */
  byKey<T>(keyOf: (record: T) => Key): (record: T) => string;
  /** The partition subjects of some key groups (a list, or a range as Flink assigns them): a natsSource's splits. */
  subjects(keyGroups: Iterable<number> | KeyGroupRange): string[];
  /** The key group a partition subject carries, or undefined for a subject of another topic. */
  keyGroupOf(subject: string): number | undefined;
}

/**
 * Partitions that are key groups (Kafka Streams' partitions, cut the way Flink cuts keyed state): a topic's messages
 * are published to `<prefix>.<topic>.<keyGroup>`, the key group computed by weir's own `keyGroupOf`, so a process that
 * owns some key groups reads exactly their partitions, and the state it restores for them is the state of the keys
 * those partitions carry. The server's `partition(n)` subject mapping hashes differently (FNV-1a): see README
 * "Beyond one machine" for foreign producers.
 * @example
 * const orders = keyGroupPartitions({ prefix: 'shop', topic: 'orders' });
 * flow.pipe(toNats({ servers, subject: orders.byKey((o: Order) => o.customer) }, { uid: 'orders-out' }));
 * job.source(natsSource({ servers, stream: 'SHOP', subjects: orders.subjects({ start: 0, end: 63 }) }), { uid: 'orders' });
 */
export function keyGroupPartitions(options: KeyGroupPartitionsOptions): KeyGroupPartitions {
  const { prefix, topic, maxParallelism = DEFAULT_MAX_PARALLELISM } = options;
  const who = `keyGroupPartitions(${String(prefix)}.${String(topic)})`;
  // Subject tokens: no wildcards, no separators inside a token, no white space.
  if (typeof prefix !== 'string' || !/^[^\s.*>]+(\.[^\s.*>]+)*$/.test(prefix)) throw new JobDefinitionError(`${who}: prefix must be one or more subject tokens without wildcards, e.g. 'weir'`);
  if (typeof topic !== 'string' || !/^[^\s.*>]+$/.test(topic)) throw new JobDefinitionError(`${who}: topic must be one subject token without wildcards, e.g. 'orders'`);
  if (!(Number.isInteger(maxParallelism) && maxParallelism >= 1)) throw new JobDefinitionError(`${who}: maxParallelism must be an integer ≥ 1 (the job's), got ${String(maxParallelism)}`);
  const base = `${prefix}.${topic}.`;
  const subject = (keyGroup: number): string => {
    if (!(Number.isInteger(keyGroup) && keyGroup >= 0 && keyGroup < maxParallelism)) {
      throw new JobDefinitionError(`${who}: key group ${String(keyGroup)} is not in [0, ${maxParallelism - 1}]`);
    }
    return base + keyGroup;
  };
  const subjectOfKey = (key: Key): string => base + keyGroupOf(key, maxParallelism);
  return {
    maxParallelism,
    streamSubject: `${base}*`,
    subject,
    subjectOfKey,
    byKey: (keyOf) => (record) => subjectOfKey(keyOf(record)),
    subjects(keyGroups) {
      const groups = isRange(keyGroups) ? Array.from({ length: Math.max(0, keyGroups.end - keyGroups.start + 1) }, (_, i) => keyGroups.start + i) : [...keyGroups];
      return groups.map(subject);
    },
    keyGroupOf(candidate) {
      if (!candidate.startsWith(base)) return undefined;
      const rest = candidate.slice(base.length);
      if (!/^\d+$/.test(rest)) return undefined;
      const group = Number(rest);
      return group < maxParallelism ? group : undefined;
    },
  };
}

function isRange(keyGroups: Iterable<number> | KeyGroupRange): keyGroups is KeyGroupRange {
  return typeof (keyGroups as KeyGroupRange).start === 'number' && typeof (keyGroups as KeyGroupRange).end === 'number';
}

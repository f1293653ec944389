import { JobDefinitionError, MalformedRecordError } from '../../../core/errors.js';

/**
 * The header that marks a JetStream message holding several records (a batch); its value is their count. A message
 * without it holds one record, so plain messages and batches share a stream and a reader tells them apart.
 */
export const NATS_BATCH_HEADER = 'Weir-Batch';

/** How `toNats` packs records into messages (Kafka's `batch.size`, counted in records and in bytes). */
export interface NatsBatchOptions {
  /** Records per message, at most (1000 by default). */
  maxRecords?: number;
  /** Payload bytes per message, at most (256 KiB by default; the server refuses more than its `max_payload`, 1 MiB). */
  maxBytes?: number;
}

export interface NatsBatchLimits {
  readonly maxRecords: number;
  readonly maxBytes: number;
}

/** One message to publish: its subject, its records' payloads, and the index of its first record in the transaction. */
export interface PackedMessage {
  readonly subject: string;
  readonly payloads: string[];
  readonly first: number;
}

/** The limits of `batch`, checked; `undefined` (no batching) is one record per message. */
export function batchLimits(batch: NatsBatchOptions | undefined, name: string): NatsBatchLimits {
  if (batch === undefined) return { maxRecords: 1, maxBytes: Infinity };
  if (typeof batch !== 'object' || batch === null) throw new JobDefinitionError(`${name}: batch must be an object { maxRecords?, maxBytes? }, got ${String(batch)}`);
  const { maxRecords = 1000, maxBytes = 256 * 1024 } = batch;
  if (!(Number.isInteger(maxRecords) && maxRecords >= 1)) throw new JobDefinitionError(`${name}: batch.maxRecords must be an integer ≥ 1, got ${String(maxRecords)}`);
  if (!(Number.isInteger(maxBytes) && maxBytes >= 1)) throw new JobDefinitionError(`${name}: batch.maxBytes must be an integer ≥ 1, got ${String(maxBytes)}`);
  return { maxRecords, maxBytes };
}

/**
 * Packs a transaction's `[subject, payload]` records into messages, per subject, in order: a subject's records keep
 * their order across its messages, and messages come in the order of their first record. The packing depends only
 * on the records and the limits, so a replayed transaction packs into the same messages under the same ids. A payload
 * holding a newline cannot sit in a batch (newlines separate its records): it goes alone, as a plain message.
 */
export function packMessages(records: readonly (readonly [string, string])[], { maxRecords, maxBytes }: NatsBatchLimits): PackedMessage[] {
  if (maxRecords === 1) return records.map(([subject, payload], first) => ({ subject, payloads: [payload], first }));
  const packed: PackedMessage[] = [];
  // Per subject, the message being filled and its payload bytes so far (newlines included).
  const open = new Map<string, { message: PackedMessage; bytes: number }>();
  for (let index = 0; index < records.length; index++) {
    const [subject, payload] = records[index]!;
    const size = Buffer.byteLength(payload) + 1;
    let current = open.get(subject);
    if (current !== undefined && (current.message.payloads.length >= maxRecords || current.bytes + size > maxBytes + 1 || payload.includes('\n'))) current = undefined;
    if (current === undefined) {
      current = { message: { subject, payloads: [], first: index }, bytes: 0 };
      packed.push(current.message);
      if (payload.includes('\n')) open.delete(subject);
      else open.set(subject, current);
    }
    current.message.payloads.push(payload);
    current.bytes += size;
  }
  return packed;
}

/**
 * A batch's payload: its records' payloads joined by newlines (newline-delimited JSON when the records are JSON).
 * Publish it with the header `NATS_BATCH_HEADER` set to the count, and `natsSource` reads the records one by one.
 * @example
 * const h = headers(); h.set(NATS_BATCH_HEADER, String(users.length));
 * await js.publish('clicks.7', natsBatchPayload(users.map((user) => JSON.stringify({ user }))), { headers: h });
 */
export function natsBatchPayload(payloads: readonly string[]): string {
  for (const [index, payload] of payloads.entries()) {
    if (payload.includes('\n')) {
      throw new MalformedRecordError(`natsBatchPayload: record ${index} of the batch holds a newline, which separates a batch's records; publish it as a message of its own, or serialize it without newlines (JSON.stringify does)`);
    }
  }
  return payloads.join('\n');
}

/**
 * The records' payloads of a batch message, or undefined for a message of one record (no `NATS_BATCH_HEADER`).
 * A batch whose count does not match its payload is malformed.
 */
export function batchRecords(message: { readonly headers?: { get(key: string): string } | undefined; string(): string }): string[] | undefined {
  const count = message.headers?.get(NATS_BATCH_HEADER);
  if (count === undefined || count === '') return undefined;
  const lines = message.string().split('\n');
  if (String(lines.length) !== count) throw new MalformedRecordError(`its ${NATS_BATCH_HEADER} header says ${count} records, its payload holds ${lines.length} lines`);
  return lines;
}

/**
 * The records of a batch message parsed as JSON in one go (its lines joined into one array: one parse per message,
 * rather than a string and a parse per record), or undefined when that does not give exactly its count of records:
 * a malformed record, or a message of one record. The caller then reads the records one by one, which names the bad one.
 */
export function batchJson(message: { readonly headers?: { get(key: string): string } | undefined; string(): string }): unknown[] | undefined {
  const count = message.headers?.get(NATS_BATCH_HEADER);
  if (count === undefined || count === '') return undefined;
  let values: unknown;
  try {
    values = JSON.parse(`[${message.string().replaceAll('\n', ',')}]`);
  } catch {
    return undefined;
  }
  return Array.isArray(values) && String(values.length) === count ? values : undefined;
}

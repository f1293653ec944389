/**
 * Turns state values into JSON-safe values for snapshots and back. Chosen per state descriptor.
 * `id` and `version` are recorded in every snapshot so that restoring under another serializer is detected.
 */
export interface Serializer<T> {
  readonly id: string;
  readonly version: number;
  encode(value: T): unknown;
  decode(encoded: unknown, writtenWithVersion: number): T;
}

/**
 * Turns state values into JSON-safe values for snapshots and back. Chosen per state descriptor.
 * `id` and `version` are recorded in every snapshot so that restoring under another serializer is detected.
 */
export interface Serializer<T> {
  readonly id: string;
  readonly version: number;
  /**
   * Set when `encode` gives a value that is plain JSON back as it is (`json`, `auto`): a full snapshot may then
   * write such values of one shape as rows of their fields (`ShapedEntries`), which read back as the same values.
   */
  readonly plainAsIs?: true;
  encode(value: T): unknown;
  decode(encoded: unknown, writtenWithVersion: number): T;
}

import type { DeliveryInfo, JsMsg, PullOptions } from '@nats-io/jetstream';

/**
 * One record of a batch message, as the message `natsSource`'s `parse` and `timestamp` take: its `data`, `string()`
 * and `json()` are the record's, everything else (subject, headers, sequence, delivery info) is its message's. So a
 * `parse` written for messages of one record reads batches unchanged. `index` is the record's place in its message.
 * Acknowledging is its message's business (the source never acks: it reads with an ordered consumer).
 */
export class NatsBatchedRecord implements JsMsg {
  constructor(
    private readonly message: JsMsg,
    private readonly payload: string,
    readonly index: number,
  ) {}

  get data(): Uint8Array {
    return Buffer.from(this.payload);
  }
  string(): string {
    return this.payload;
  }
  json<T>(): T {
    return JSON.parse(this.payload) as T;
  }

  get redelivered(): boolean {
    return this.message.redelivered;
  }
  get info(): DeliveryInfo {
    return this.message.info;
  }
  get seq(): number {
    return this.message.seq;
  }
  get headers(): JsMsg['headers'] {
    return this.message.headers;
  }
  get subject(): string {
    return this.message.subject;
  }
  get sid(): number {
    return this.message.sid;
  }
  get time(): Date {
    return this.message.time;
  }
  get timestamp(): string {
    return this.message.timestamp;
  }
  get timestampNanos(): bigint {
    return this.message.timestampNanos;
  }
  ack(): void {
    this.message.ack();
  }
  nak(millis?: number): void {
    this.message.nak(millis);
  }
  working(): void {
    this.message.working();
  }
  next(subject: string, options?: Partial<PullOptions>): void {
    this.message.next(subject, options);
  }
  term(reason?: string): void {
    this.message.term(reason);
  }
  ackAck(options?: Partial<{ timeout: number }>): Promise<boolean> {
    return this.message.ackAck(options);
  }
}

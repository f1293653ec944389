import type { StateDescriptor } from '../core/types.js';
import { checkSameRegistration } from './stateChecks.js';

interface Registration<R> {
  /** The descriptor that registered the state first: the one its state object is made with. */
  readonly descriptor: StateDescriptor<unknown>;
  /** What the backend keeps for the state (the heap's tables, LMDB's rows). */
  readonly registered: R;
  /** The state object handed out for the name, once asked for. */
  state: unknown;
}

/**
 * The states a keyed backend has registered, by name (Flink's registered-state table of a keyed backend), shared by
 * every backend: a descriptor of a name already registered must agree with the first (kind, serializer, TTL), the
 * job hears of each state once (`onStateRegistered`), and every descriptor of a name gets the same state object.
 */
export class StateRegistry<R> {
  private readonly byName = new Map<string, Registration<R>>();

  /**
   * @param create what the backend keeps for a new state; may throw (restored state that does not fit the
   * descriptor), and then the name stays free for the next `register`.
   */
  constructor(
    private readonly uid: string,
    private readonly onStateRegistered: ((descriptor: StateDescriptor<unknown>) => void) | undefined,
    private readonly create: (descriptor: StateDescriptor<unknown>) => R,
  ) {}

  /** What the backend keeps for the descriptor's state, registering it on first use. */
  register(descriptor: StateDescriptor<unknown>): R {
    return this.registration(descriptor).registered;
  }

  /** The state object of the descriptor's name: made by `createState` (with the first descriptor) once. */
  state<S>(descriptor: StateDescriptor<unknown>, createState: (registered: R, descriptor: StateDescriptor<unknown>) => S): S {
    const registration = this.registration(descriptor);
    registration.state ??= createState(registration.registered, registration.descriptor);
    return registration.state as S;
  }

  /** What the backend keeps for the state `name`, if registered. */
  get(name: string): R | undefined {
    return this.byName.get(name)?.registered;
  }

  /** What the backend keeps for each registered state, in registration order. */
  *registered(): IterableIterator<R> {
    for (const registration of this.byName.values()) yield registration.registered;
  }

  clear(): void {
    this.byName.clear();
  }

  private registration(descriptor: StateDescriptor<unknown>): Registration<R> {
    const known = this.byName.get(descriptor.name);
    if (known !== undefined) {
      if (known.descriptor !== descriptor) checkSameRegistration(this.uid, known.descriptor, descriptor);
      return known;
    }
    this.onStateRegistered?.(descriptor);
    const registration: Registration<R> = { descriptor, registered: this.create(descriptor), state: undefined };
    this.byName.set(descriptor.name, registration);
    return registration;
  }
}

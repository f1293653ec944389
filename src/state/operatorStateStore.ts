import { StateDescriptorConflictError, StateMigrationError } from '../core/errors.js';
import type { Json, ListState, StateDescriptor, StateMeta } from '../core/types.js';
import { checkRestoredMeta, checkSameRegistration, checkedElements, metaOf, rejectNull, restoredDecoder } from './stateChecks.js';

/**
 * How an operator list state is handed out when a job is restored, at any parallelism (Flink's redistribution
 * modes): `'even-split'` concatenates every saved instance's list and splits it evenly, in order, among the new
 * instances; `'union'` gives every new instance the whole concatenation.
 */
export type Redistribution = 'even-split' | 'union';

export interface OperatorStateOptions {
  /** `'even-split'` by default. */
  redistribution?: Redistribution;
}

/** One operator list state as one instance saves it: each element encoded alone, so lists split without decoding. */
interface SavedList {
  meta: StateMeta;
  redistribution: Redistribution;
  elements: unknown[];
}

/** An instance's operator state in its snapshot; `subtask` orders the concatenation on restore. */
interface SavedOperatorState {
  subtask: number;
  lists: SavedList[];
}

interface RegisteredList {
  descriptor: StateDescriptor<unknown>;
  redistribution: Redistribution;
  values: unknown[];
  state: ListState<unknown>;
}

/**
 * The operator (non-keyed) state of one parallel instance (Flink's OperatorStateBackend): named list states, saved
 * with each checkpoint and redistributed on restore. Restored lists are taken from every saved instance's state, so
 * a job restored at another parallelism neither loses nor duplicates elements (with even-split).
 */
export class OperatorStateStore {
  private readonly lists = new Map<string, RegisteredList>();
  /** This instance's share of each restored list nobody has asked for yet. */
  private readonly restored = new Map<string, SavedList>();

  /**
   * @param saved the operator state of every instance of the checkpoint restored (`TaskContext.restoredOperatorStates`
   *   entries as `snapshot` made them), whatever the parallelism then.
   */
  constructor(
    private readonly uid: string,
    private readonly index: number,
    parallelism: number,
    saved: readonly (Json | undefined)[],
  ) {
    const instances = (saved.filter((state) => state !== undefined && state !== null) as unknown as SavedOperatorState[]).sort((a, b) => a.subtask - b.subtask);
    const byName = new Map<string, SavedList>();
    for (const instance of instances) {
      for (const list of instance.lists) {
        const all = byName.get(list.meta.name);
        if (all === undefined) byName.set(list.meta.name, { ...list, elements: list.elements.slice() });
        else for (const element of list.elements) all.elements.push(element);
      }
    }
    for (const [name, all] of byName) {
      const n = all.elements.length;
      const share =
        all.redistribution === 'union' ? all.elements : all.elements.slice(Math.floor((index * n) / parallelism), Math.floor(((index + 1) * n) / parallelism));
      this.restored.set(name, { ...all, elements: share });
    }
  }

  /** The instance's list state of `descriptor` (a `listState`), with its restored share on first use. */
  getListState<T>(descriptor: StateDescriptor<ListState<T>, T[]>, options: OperatorStateOptions = {}): ListState<T> {
    const redistribution = options.redistribution ?? 'even-split';
    const generic = descriptor as unknown as StateDescriptor<unknown>;
    if (redistribution !== 'even-split' && redistribution !== 'union') {
      throw new TypeError(`operator '${this.uid}': operator state '${descriptor.name}': redistribution must be 'even-split' or 'union', got ${String(redistribution)}`);
    }
    if (descriptor.kind !== 'list') {
      throw new TypeError(`operator '${this.uid}': operator state '${descriptor.name}' must be a listState, not ${descriptor.kind} state (Flink's operator state is list state)`);
    }
    if (descriptor.ttl !== undefined) throw new TypeError(`operator '${this.uid}': operator state '${descriptor.name}' cannot have a TTL; only keyed state expires`);
    const known = this.lists.get(descriptor.name);
    if (known !== undefined) {
      if (known.descriptor !== generic) checkSameRegistration(this.uid, known.descriptor, generic);
      if (known.redistribution !== redistribution) throw this.modeConflict(descriptor.name, known.redistribution, redistribution, StateDescriptorConflictError, 'is already used');
      return known.state as ListState<T>;
    }
    const values = this.restore(generic, redistribution);
    const state: ListState<unknown> = {
      get: () => values.slice(),
      add(value) {
        rejectNull(value, descriptor.name, 'cannot add');
        values.push(value);
      },
      addAll(added) {
        const list = checkedElements(added, descriptor.name, 'addAll');
        for (let i = 0; i < list.length; i++) values.push(list[i]);
      },
      update(replacement) {
        const list = checkedElements(replacement, descriptor.name, 'update');
        values.splice(0, values.length, ...list);
      },
      clear: () => void values.splice(0),
    };
    this.lists.set(descriptor.name, { descriptor: generic, redistribution, values, state });
    return state as ListState<T>;
  }

  private restore(descriptor: StateDescriptor<unknown>, redistribution: Redistribution): unknown[] {
    const saved = this.restored.get(descriptor.name);
    if (saved === undefined) return [];
    checkRestoredMeta(this.uid, saved.meta, descriptor);
    // The split was made by the mode the state was saved with; reading it by another would lose or repeat elements.
    if (saved.redistribution !== redistribution) throw this.modeConflict(descriptor.name, saved.redistribution, redistribution, StateMigrationError, 'was saved');
    const decode = restoredDecoder(saved.meta, descriptor);
    this.restored.delete(descriptor.name);
    return saved.elements.map((element) => (decode(element) as unknown[])[0]);
  }

  private modeConflict(name: string, was: Redistribution, now: Redistribution, type: typeof StateMigrationError, what: string): Error {
    return new type(`operator '${this.uid}': operator state '${name}' ${what} with redistribution '${was}', not '${now}'; keep the mode, or use another state name`);
  }

  /** The instance's operator state as of now, for a checkpoint (a restored share nobody read yet is kept as it is). */
  snapshot(): Json {
    const lists: SavedList[] = Array.from(this.restored.values());
    for (const { descriptor, redistribution, values } of this.lists.values()) {
      lists.push({ meta: metaOf(descriptor), redistribution, elements: values.map((value) => descriptor.serializer.encode([value])) });
    }
    const saved: SavedOperatorState = { subtask: this.index, lists };
    return saved as unknown as Json;
  }
}

import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_PARALLELISM, heapStateBackend, valueState } from 'weir';
import { describeKeyedStateBackend } from './keyedState.conformance';

describeKeyedStateBackend('heap', () => heapStateBackend());

describe('heap state backend, reads while a snapshot holds the value', () => {
  const open = () =>
    heapStateBackend().createKeyedBackend({
      uid: 'op',
      maxParallelism: DEFAULT_MAX_PARALLELISM,
      keyGroupRange: { start: 0, end: DEFAULT_MAX_PARALLELISM - 1 },
      clock: { processingTime: () => 0, eventTime: () => 0 },
    });

  it('hands out a private copy of a value state, and the value itself when its descriptor says `immutable`', () => {
    const backend = open();
    const copied = backend.getState(valueState<{ n: number }>('copied'));
    const kept = backend.getState(valueState<{ n: number }>('kept', { immutable: true }));
    backend.setCurrentKey('k');
    const value = { n: 1 };
    const other = { n: 2 };
    copied.update(value);
    kept.update(other);
    const snapshot = backend.snapshot();
    expect(copied.value()).toEqual(value);
    expect(copied.value()).not.toBe(value);
    expect(kept.value()).toBe(other);
    snapshot.release();
    backend.dispose();
  });
});

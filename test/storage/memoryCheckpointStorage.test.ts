import { describe, expect, it } from 'vitest';
import { JobDefinitionError, memoryCheckpointStorage } from 'weir';
import { describeCheckpointStorage } from './checkpointStorage.conformance';

describeCheckpointStorage('memory', async () => ({ storage: memoryCheckpointStorage() }), { writeStructured: false, lock: false });

describe('memoryCheckpointStorage', () => {
  it('exposes maxStateSize, 5 MiB by default, for the engine to enforce', () => {
    expect(memoryCheckpointStorage().maxStateSize).toBe(5 * 1024 * 1024);
    expect(memoryCheckpointStorage({ maxStateSize: 1024 }).maxStateSize).toBe(1024);
    expect(memoryCheckpointStorage().location).toBe('memory');
  });

  it('rejects a maxStateSize that is not a positive number', () => {
    expect(() => memoryCheckpointStorage({ maxStateSize: 0 })).toThrow(JobDefinitionError);
    expect(() => memoryCheckpointStorage({ maxStateSize: Number.NaN })).toThrow(/maxStateSize/);
    expect(() => memoryCheckpointStorage({ maxStateSize: '1' as unknown as number })).toThrow(JobDefinitionError);
  });
});

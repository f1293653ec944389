import { CheckpointNotFoundError, type CheckpointStorage } from 'weir/browser';

/**
 * A read-only `CheckpointStorage` over the file API of `weir inspect --serve` (`/api/list`, `/api/read`), so the
 * inspector runs the same reading code on a directory on disk as on IndexedDB.
 */
export function httpCheckpointStorage(base: string): CheckpointStorage {
  const url = (route: string, param: string, value: string) => `${base}/api/${route}?${param}=${encodeURIComponent(value)}`;
  const refuse = () => Promise.reject(new Error('the inspector is read-only'));
  return {
    location: base,
    async list(dir) {
      const response = await fetch(url('list', 'dir', dir));
      if (!response.ok) throw new Error(`listing ${dir}: HTTP ${response.status} ${await response.text()}`);
      return (await response.json()) as string[];
    },
    async read(path) {
      const response = await fetch(url('read', 'path', path));
      if (response.status === 404) throw new CheckpointNotFoundError(`checkpoint file ${path} does not exist`);
      if (!response.ok) throw new Error(`reading ${path}: HTTP ${response.status} ${await response.text()}`);
      return new Uint8Array(await response.arrayBuffer());
    },
    write: refuse,
    remove: refuse,
  };
}

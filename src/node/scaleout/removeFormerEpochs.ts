import type { CheckpointStorage } from '../../core/types.js';

/**
 * Removes the directories of a key group's former owners, `t<token>` under `keyGroupDir` with a token below `token`
 * (the owner that just committed its first checkpoint of its own): the last committed epoch, whose files the new
 * owner no longer needs (its checkpoints are full), and those of fenced owners whose checkpoints never got committed.
 * A token only grows with each takeover, so every lower one belongs to an owner that can no longer commit; a fenced
 * owner that still writes after this is cleaned up by the next takeover.
 */
export async function removeFormerEpochs(storage: CheckpointStorage, keyGroupDir: string, token: number): Promise<void> {
  for (const child of await storage.list(keyGroupDir)) {
    const epoch = /^t(\d+)$/.exec(child);
    if (epoch !== null && Number(epoch[1]) < token) await storage.remove(`${keyGroupDir}/${child}`);
  }
}

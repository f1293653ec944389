import { CheckpointCorruptedError, CheckpointNotFoundError, StateMigrationError } from '../../core/errors.js';
import type { CheckpointStorage } from '../../core/types.js';

/**
 * A group savepoint asked for, as `scaleOutSavepoint` writes it under `SAVEPOINT_REQUEST_KEY` in `<group>-commits`:
 * every member that reads it before `deadline` takes a savepoint of each key group it owns into `<target>/kg-<n>`
 * and answers under `savepointAnswerKey(id, n)`; with `stop`, it then stops that key group's task and leaves.
 */
export interface SavepointRequest {
  id: string;
  target: string;
  stop: boolean;
  /** Milliseconds since the epoch after which members ignore the request (the operation has given up or is done). */
  deadline: number;
}

/** What a member answers for one key group: the savepoint's directory, or why it could not take it. */
export type SavepointAnswer = { member: string; path: string } | { member: string; error: string };

/** A complete group savepoint: written last, into `<target>/_group-savepoint`, once every key group answered. */
export interface GroupSavepointManifest {
  format: 'weir-group-savepoint';
  version: 1;
  /** The group that took it: each key group's savepoint belongs to its job `<group>-kg<n>`. */
  group: string;
  maxParallelism: number;
  /** Each key group's savepoint directory in the storage, by key group. */
  keyGroups: Record<string, string>;
}

export const SAVEPOINT_REQUEST_KEY = 'savepoint.request';
export const savepointAnswerKey = (id: string, keyGroup: number | '*') => `savepoint.${id}.${keyGroup}`;
/** The manifest's file in a group savepoint's directory. */
export const manifestFile = (target: string) => `${target.replace(/\/+$/, '')}/_group-savepoint`;

/** Reads the request from its KV entry's JSON; undefined for anything else. */
export function parseSavepointRequest(value: unknown): SavepointRequest | undefined {
  const request = value as Partial<SavepointRequest> | null;
  if (typeof request?.id !== 'string' || typeof request.target !== 'string' || typeof request.stop !== 'boolean' || typeof request.deadline !== 'number') return undefined;
  return request as SavepointRequest;
}

/**
 * Reads a group savepoint's manifest for a group of `maxParallelism` key groups: its key groups' savepoint directories
 * and the name of the group that took them (their jobs' names).
 */
export async function readGroupSavepoint(storage: CheckpointStorage, target: string, maxParallelism: number): Promise<GroupSavepointManifest> {
  const file = manifestFile(target);
  const bytes = await storage.read(file).catch((cause: unknown) => {
    if (!(cause instanceof CheckpointNotFoundError)) throw cause;
    throw new CheckpointNotFoundError(
      `${storage.location}: '${target}' is not a complete group savepoint (no ${file}): scaleOutSavepoint writes that manifest last, once every key group answered; give the target of a savepoint that completed`,
      { cause },
    );
  });
  let manifest: GroupSavepointManifest;
  try {
    manifest = JSON.parse(new TextDecoder().decode(bytes)) as GroupSavepointManifest;
  } catch (cause) {
    throw new CheckpointCorruptedError(`${storage.location}: ${file} is not JSON (${String(cause)}); take the group savepoint again`, { cause });
  }
  if (manifest?.format !== 'weir-group-savepoint' || manifest.version !== 1 || typeof manifest.group !== 'string' || typeof manifest.keyGroups !== 'object' || manifest.keyGroups === null) {
    throw new CheckpointCorruptedError(`${storage.location}: ${file} is not a weir group savepoint manifest of version 1; take the group savepoint again`);
  }
  if (manifest.maxParallelism !== maxParallelism) {
    // Keyed state is organised by key group: another number of key groups would send keys to other owners.
    throw new StateMigrationError(
      `group savepoint '${target}' was taken with maxParallelism ${manifest.maxParallelism}, this group has ${maxParallelism}; the number of key groups is fixed once state exists (members may change): set maxParallelism to ${manifest.maxParallelism}`,
    );
  }
  return manifest;
}

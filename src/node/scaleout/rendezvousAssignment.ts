import { hashKey } from '../../core/keyGroups.js';

/**
 * The member that owns a key group among `members`, by rendezvous (highest random weight) hashing: each member
 * weighs `hashKey(member, keyGroup)` and the heaviest wins, ties to the smaller id. Every member computes the same
 * owner from the same member list, with no coordination; and the assignment is sticky: when a member joins, only the
 * key groups it now wins move (about 1/n of them), all to it; when one leaves, only its own move.
 * @example rendezvousOwner(7, ['a', 'b', 'c']) // 'b', say: the same on every process
 */
export function rendezvousOwner(keyGroup: number, members: readonly string[]): string | undefined {
  let owner: string | undefined;
  let best = -1;
  for (const member of members) {
    const weight = hashKey(`${member}\u0000${keyGroup}`);
    if (weight > best || (weight === best && owner !== undefined && member < owner)) {
      best = weight;
      owner = member;
    }
  }
  return owner;
}

/**
 * The key groups `member` owns among `members` (see `rendezvousOwner`), ascending.
 * @example assignedKeyGroups('a', ['a', 'b'], 128) // about half of 0…127
 */
export function assignedKeyGroups(member: string, members: readonly string[], maxParallelism: number): number[] {
  const owned: number[] = [];
  for (let keyGroup = 0; keyGroup < maxParallelism; keyGroup++) if (rendezvousOwner(keyGroup, members) === member) owned.push(keyGroup);
  return owned;
}

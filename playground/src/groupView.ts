import type { ScaleOutStatus } from 'weir/node';
import { el } from './values';

/** `GET /v1/group` as a scale-out member's server answers it: the group's status, and which member answered. */
export type GroupAnswer = ScaleOutStatus & { member: string; running: number[] };

/** The scale-out group's page drawn into a parent element; `update` redraws it from a newer answer. */
export interface GroupView {
  update(group: GroupAnswer, now: number): void;
}

/**
 * The scale-out group as `serveScaleOutQueries(runner, { liveView })` serves it at `/group`: each live member with
 * its heartbeat's age and the key groups it owns, and each key group with its owner, fencing token and committed
 * checkpoint (id and age, when the server was given the shared storage). Rows carry `data-*` attributes of their
 * values, for tests and for whoever scripts the page.
 */
export function createGroupView(parent: HTMLElement): GroupView {
  const panel = (title: string, note: string, table: HTMLTableElement) => {
    const section = el('section', undefined, 'panel');
    const heading = el('h2', title);
    heading.append(' ', el('small', note));
    section.append(heading, table);
    parent.append(section);
  };
  const status = el('p', 'waiting for the group…', 'live-status group-status');
  parent.append(status);
  const members = el('table', undefined, 'small group-members');
  panel('Members', 'live (heartbeat not expired), with the key groups whose lease each holds', members);
  const keyGroups = el('table', undefined, 'small group-key-groups');
  panel('Key groups', 'owner, fencing token and committed checkpoint', keyGroups);

  const row = (cells: string[], header = false) => {
    const tr = el('tr');
    for (const cell of cells) tr.append(el(header ? 'th' : 'td', cell));
    return tr;
  };
  return {
    update(group, now) {
      status.textContent = `group '${group.group}', answered by member '${group.member}': ${group.members.length} members, ${group.keyGroups.filter((kg) => kg.owner !== undefined).length} key groups owned`;
      members.replaceChildren(row(['member', 'heartbeat age', 'key groups', 'queries at'], true));
      for (const member of group.members) {
        const tr = row([member.id, `${(member.heartbeatAgeMs / 1000).toFixed(1)} s`, member.owns.join(' ') || '–', member.queryUrl ?? '–']);
        tr.dataset.member = member.id;
        tr.dataset.owns = member.owns.join(',');
        members.append(tr);
      }
      keyGroups.replaceChildren(row(['key group', 'owner', 'token', 'checkpoint', 'age'], true));
      for (const kg of group.keyGroups) {
        const { checkpoint } = kg;
        const age = checkpoint?.timestamp === undefined ? '–' : `${((now - checkpoint.timestamp) / 1000).toFixed(1)} s`;
        const tr = row([String(kg.keyGroup), kg.owner ?? '(none)', String(kg.token ?? '–'), checkpoint === undefined ? '–' : checkpoint.id === undefined ? (checkpoint.error ?? checkpoint.path) : `chk-${checkpoint.id}`, age]);
        tr.dataset.keyGroup = String(kg.keyGroup);
        tr.dataset.owner = kg.owner ?? '';
        if (checkpoint?.id !== undefined) tr.dataset.checkpointId = String(checkpoint.id);
        keyGroups.append(tr);
      }
    },
  };
}

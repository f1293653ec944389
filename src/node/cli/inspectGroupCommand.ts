import { natsObjectCheckpointStorage } from '../scaleout/natsObjectCheckpointStorage.js';
import { scaleOutStatus, type ScaleOutStatus } from '../scaleout/scaleOutStatus.js';
import { formatTime, indent, table } from './inspectCommand.js';

export interface InspectGroupOptions {
  /** The NATS servers, comma-separated. */
  nats: string;
  group: string;
  /** The Object Store bucket the members checkpoint to: given, each committed checkpoint's id and time are shown. */
  bucket?: string;
  json: boolean;
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

/**
 * `weir inspect --nats <servers> --group <group> [--bucket <checkpoint bucket>] [--json]`: a scale-out group's live
 * members and, per key group, its owner, fencing token and committed checkpoint. Returns the exit code: 0 once the
 * group was read, 1 when it cannot be.
 */
export async function inspectGroupCommand(options: InspectGroupOptions): Promise<number> {
  const servers = options.nats.split(',').map((server) => server.trim()).filter((server) => server !== '');
  const storage = options.bucket === undefined ? undefined : natsObjectCheckpointStorage({ servers, bucket: options.bucket });
  let status: ScaleOutStatus;
  try {
    status = await scaleOutStatus({ servers, group: options.group, storage });
  } catch (error) {
    options.err.write(`weir inspect: ${(error as Error)?.message ?? String(error)}\n`);
    return 1;
  } finally {
    await storage?.close().catch(() => undefined);
  }
  options.out.write(options.json ? `${JSON.stringify(status, null, 2)}\n` : renderGroup(status));
  return 0;
}

export function renderGroup({ group, members, keyGroups }: ScaleOutStatus): string {
  const lines = [`scale-out group ${group}: ${members.length} live member${members.length === 1 ? '' : 's'}, ${keyGroups.filter((kg) => kg.owner !== undefined).length} of ${keyGroups.length} key groups owned`];
  lines.push(
    '',
    ...indent(
      table(
        ['MEMBER', 'HEARTBEAT', 'KEY GROUPS', 'QUERIES'],
        members.map((m) => [m.id, `${(m.heartbeatAgeMs / 1000).toFixed(1)} s ago`, ranges(m.owns), m.queryUrl ?? '-']),
      ),
    ),
  );
  lines.push(
    '',
    ...indent(
      table(
        ['KEY GROUP', 'OWNER', 'TOKEN', 'COMMITTED BY', 'CHECKPOINT', 'ID', 'TIME'],
        keyGroups.map((kg) => [
          String(kg.keyGroup),
          kg.owner ?? '(none)',
          kg.token === undefined ? '-' : String(kg.token),
          kg.committedBy ?? '-',
          kg.checkpoint?.path ?? '-',
          kg.checkpoint?.id === undefined ? (kg.checkpoint?.error === undefined ? '-' : 'unreadable') : String(kg.checkpoint.id),
          kg.checkpoint?.timestamp === undefined ? '-' : formatTime(kg.checkpoint.timestamp),
        ]),
      ),
    ),
  );
  for (const kg of keyGroups) if (kg.checkpoint?.error !== undefined) lines.push('', `key group ${kg.keyGroup}: ${kg.checkpoint.error}`);
  return `${lines.join('\n')}\n`;
}

/** `0-3,6` for [0, 1, 2, 3, 6]; `-` for none. */
function ranges(numbers: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < numbers.length; ) {
    let j = i;
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j]! + 1) j++;
    parts.push(j === i ? String(numbers[i]) : `${numbers[i]}-${numbers[j]}`);
    i = j + 1;
  }
  return parts.join(',') || '-';
}

import { natsObjectCheckpointStorage } from '../scaleout/natsObjectCheckpointStorage.js';
import { scaleOutSavepoint, type ScaleOutSavepoint } from '../scaleout/scaleOutSavepoint.js';

export interface SavepointGroupOptions {
  /** The NATS servers, comma-separated. */
  nats: string;
  group: string;
  /** The Object Store bucket the members checkpoint to: the savepoint goes there. */
  bucket: string;
  /** The savepoint's directory in the bucket. */
  target: string;
  stop: boolean;
  /** The group's number of key groups, as text from the command line (128 by default). */
  maxParallelism?: string;
  /** How long to wait for every key group, in ms, as text (60 000 by default). */
  timeout?: string;
  json: boolean;
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

/**
 * `weir savepoint --nats <servers> --group <group> --bucket <checkpoint bucket> --target <dir> [--stop]
 * [--max-parallelism <n>] [--timeout <ms>] [--json]`: `scaleOutSavepoint` from the command line (Flink's
 * `flink savepoint`, and with `--stop` `flink stop`). Returns the exit code: 0 once the savepoint completed, 1 when it
 * did not (the message names the key groups), 2 for bad arguments.
 */
export async function savepointGroupCommand(options: SavepointGroupOptions): Promise<number> {
  const number = (text: string | undefined, flag: string): number | undefined | Error => {
    if (text === undefined) return undefined;
    const value = Number(text);
    return Number.isInteger(value) && value >= 1 ? value : new Error(`weir savepoint: ${flag} must be a whole number ≥ 1, got '${text}'`);
  };
  const maxParallelism = number(options.maxParallelism, '--max-parallelism');
  const timeout = number(options.timeout, '--timeout');
  for (const parsed of [maxParallelism, timeout]) {
    if (parsed instanceof Error) {
      options.err.write(`${parsed.message}\n`);
      return 2;
    }
  }
  const servers = options.nats.split(',').map((server) => server.trim()).filter((server) => server !== '');
  const storage = natsObjectCheckpointStorage({ servers, bucket: options.bucket });
  let taken: ScaleOutSavepoint;
  try {
    taken = await scaleOutSavepoint({
      servers,
      group: options.group,
      storage,
      target: options.target,
      stop: options.stop,
      ...(maxParallelism === undefined ? {} : { maxParallelism: maxParallelism as number }),
      ...(timeout === undefined ? {} : { timeout: timeout as number }),
    });
  } catch (error) {
    options.err.write(`weir savepoint: ${(error as Error)?.message ?? String(error)}\n`);
    return 1;
  } finally {
    await storage.close().catch(() => undefined);
  }
  if (options.json) {
    options.out.write(`${JSON.stringify(taken, null, 2)}\n`);
  } else {
    const count = Object.keys(taken.keyGroups).length;
    options.out.write(
      `savepoint of group ${options.group}${options.stop ? ' (stopped)' : ''}: ${taken.target} in bucket ${options.bucket}, ${count} key group${count === 1 ? '' : 's'}\n` +
        `start a group from it: runScaleOut(define, { …, fromSavepoint: '${taken.target}' })\n`,
    );
  }
  return 0;
}

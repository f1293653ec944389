import { parseArgs } from 'node:util';
import { inspectCommand } from './inspectCommand.js';
import { inspectServeCommand } from './inspectServeCommand.js';
import { inspectGroupCommand } from './inspectGroupCommand.js';
import { savepointGroupCommand } from './savepointGroupCommand.js';

const USAGE = `usage: weir inspect <checkpoint-dir | savepoint-dir | job-dir | checkpoints-root> [--json] [--serve] [--progress]
       weir inspect --nats <servers> --group <group> [--bucket <checkpoint bucket>] [--json]
       weir savepoint --nats <servers> --group <group> --bucket <checkpoint bucket> --target <dir>
                      [--stop] [--max-parallelism <n>] [--timeout <ms>] [--json]

  inspect   show the jobs, checkpoints and savepoints under a path: status (complete,
            incomplete, corrupted with its error), time, duration, bytes; for each the
            operators and their states with key counts and sizes
  --json    print the report as JSON, for scripts
  --serve   serve the visual inspector on 127.0.0.1 (a free port) and print its URL
  --progress  draw the progress bar on stderr even when it is not a terminal (it is drawn
            on a terminal only by default)
  --nats, --group  show a scale-out group (runScaleOut) instead: its live members and, per
            key group, its owner, fencing token and committed checkpoint; --bucket (the
            members' Object Store checkpoint bucket) adds each checkpoint's id and time
  savepoint  take a savepoint of a scale-out group into --target of its checkpoint bucket
            (scaleOutSavepoint); --stop stops the group with it (its members leave);
            --max-parallelism is the group's number of key groups (128 by default)
  --help    show this help
`;

/** The `weir` command line: `weir inspect …`, `weir savepoint …`. Returns the exit code. */
export async function main(
  argv: string[],
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream & { isTTY?: boolean } } = { out: process.stdout, err: process.stderr },
): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.err.write(`weir: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, path, ...rest] = positionals;
  if (values.help || command === undefined) {
    (values.help ? io.out : io.err).write(USAGE);
    return values.help ? 0 : 2;
  }
  if (command === 'savepoint') {
    const { nats, group, bucket, target } = values;
    if (nats === undefined || group === undefined || bucket === undefined || target === undefined || path !== undefined) {
      io.err.write(`weir savepoint: give --nats, --group, --bucket and --target, and no path\n\n${USAGE}`);
      return 2;
    }
    const { stop = false, json = false } = values;
    return savepointGroupCommand({ nats, group, bucket, target, stop, maxParallelism: values['max-parallelism'], timeout: values.timeout, json, out: io.out, err: io.err });
  }
  if (command !== 'inspect') {
    io.err.write(`weir: unknown command '${command}'\n\n${USAGE}`);
    return 2;
  }
  if (values.group !== undefined || values.nats !== undefined) {
    if (values.group === undefined || values.nats === undefined || path !== undefined || values.serve) {
      io.err.write(`weir inspect: a scale-out group needs both --nats and --group, and no path nor --serve\n\n${USAGE}`);
      return 2;
    }
    return inspectGroupCommand({ nats: values.nats, group: values.group, bucket: values.bucket, json: values.json ?? false, out: io.out, err: io.err });
  }
  if (path === undefined || rest.length > 0) {
    io.err.write(`weir inspect: pass exactly one path\n\n${USAGE}`);
    return 2;
  }
  if (values.serve) {
    if (values.json) {
      io.err.write('weir inspect: --serve and --json exclude each other\n');
      return 2;
    }
    return inspectServeCommand(path, { out: io.out, err: io.err });
  }
  return inspectCommand(path, { json: values.json ?? false, out: io.out, err: io.err, progress: values.progress ?? false });
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean' },
      serve: { type: 'boolean' },
      progress: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      nats: { type: 'string' },
      group: { type: 'string' },
      bucket: { type: 'string' },
      target: { type: 'string' },
      stop: { type: 'boolean' },
      'max-parallelism': { type: 'string' },
      timeout: { type: 'string' },
    },
  });
}

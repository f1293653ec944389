import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { checkpointIdOf, METADATA_FILE } from '../../storage/layout.js';
import { checkpointHistory, checkpointRefOf, inspectStorage, type CheckpointSummary, type JobSummary } from '../../inspector/readCheckpoint.js';
import { fsCheckpointStorage } from '../../storage/fsCheckpointStorage.js';
import { errorCode } from '../../core/errors.js';
import { progressBar } from '../progressBar.js';

export interface InspectOptions {
  json: boolean;
  /** Where the report goes. */
  out: NodeJS.WritableStream;
  /** Where progress goes; a bar is drawn only when it is a TTY, unless `progress` forces it. */
  err: NodeJS.WritableStream & { isTTY?: boolean };
  /** Draw the progress bar even when `err` is not a TTY (`--progress`). */
  progress?: boolean;
}

/** A path the CLI was given, resolved to a storage root, its jobs, and maybe one checkpoint or savepoint in it. */
export interface Target {
  root: string;
  /** Job names; every job under the root when undefined. */
  jobs: string[] | undefined;
  /** Checkpoint or savepoint directories in the root; all of the jobs' when undefined. */
  paths: string[] | undefined;
}

/**
 * `weir inspect <checkpoint-dir | savepoint-dir | job-dir | checkpoints-root>`: reads every checkpoint and savepoint
 * under the path and prints a table of them per job, then for each its operators and states; `--json` prints the
 * summaries. Returns the exit code: 0 once the path was read (damaged checkpoints are part of the report), 1 when it
 * cannot be.
 */
export async function inspectCommand(path: string, options: InspectOptions): Promise<number> {
  const target = await resolveTarget(resolve(path));
  if (typeof target === 'string') {
    options.err.write(`weir inspect: ${target}\n`);
    return 1;
  }
  const progress = progressBar('reading', { stream: options.err, force: options.progress });
  let jobs: JobSummary[];
  try {
    jobs = await inspectStorage(fsCheckpointStorage(target.root), { jobs: target.jobs, paths: target.paths, onProgress: progress });
  } finally {
    progress.stop();
  }
  if (options.json) {
    options.out.write(`${JSON.stringify({ location: target.root, jobs }, null, 2)}\n`);
    return 0;
  }
  options.out.write(renderReport(target.root, jobs));
  return 0;
}

/**
 * Where a path points: a checkpoint (`chk-<id>`), a savepoint (`savepoint-<job>-<id>-<random>`), a job's directory
 * (with the job's savepoints beside it, in the same root), or a root of jobs and savepoints; a string says what is
 * wrong.
 */
export async function resolveTarget(path: string): Promise<Target | string> {
  let names: string[];
  const usage = 'pass a checkpoint (chk-<id>) or savepoint directory, a job\'s directory or the checkpoints root';
  try {
    if (!(await stat(path)).isDirectory()) return `${path} is not a directory; ${usage}`;
    names = await readdir(path);
  } catch (error) {
    return errorCode(error) === 'ENOENT' ? `${path} does not exist` : `${path} cannot be read: ${(error as Error).message}`;
  }
  const name = basename(path);
  // A savepoint's name alone says what it is; a checkpoint's needs its job's directory.
  const savepoint = checkpointRefOf(name);
  if (savepoint) return { root: dirname(path), jobs: [savepoint.job], paths: [name] };
  const checkpoint = checkpointRefOf(`${basename(dirname(path))}/${name}`);
  if (checkpoint) return { root: dirname(dirname(path)), jobs: [checkpoint.job], paths: [checkpoint.path] };
  if (names.includes(METADATA_FILE)) {
    return `${path} holds a _metadata file but is named neither chk-<id> nor savepoint-<job>-<id>-<random>; weir cannot tell which checkpoint or savepoint it is: give it back its name`;
  }
  if (names.some((child) => checkpointIdOf(child) !== undefined)) return { root: dirname(path), jobs: [name], paths: undefined };
  return { root: path, jobs: undefined, paths: undefined };
}

export function renderReport(root: string, jobs: JobSummary[]): string {
  const lines: string[] = [`checkpoints and savepoints in ${root}`];
  if (jobs.length === 0) lines.push('', 'no jobs found (a job directory holds chk-<id> directories; savepoints are savepoint-<job>-<id>-<random> directories)');
  for (const summary of jobs) {
    const { job, checkpoints, savepoints, failures, failuresError } = summary;
    const failed = failures.length > 0 ? `, ${failures.length} recently failed or aborted` : '';
    lines.push('', `job ${job}: ${plural(checkpoints.length, 'checkpoint')}, ${plural(savepoints.length, 'savepoint')}${failed}`);
    const all = checkpointHistory(summary);
    lines.push(
      ...indent(
        table(
          ['ID', 'KIND', 'STATUS', 'TIME', 'DURATION', 'PERSISTED', 'FULL SIZE'],
          all.map((c) => [
            String(c.id),
            c.kind,
            c.status,
            c.timestamp === undefined ? '-' : formatTime(c.timestamp),
            c.durationMs === undefined ? '-' : `${c.durationMs} ms`,
            c.persistedBytes === undefined ? '-' : formatBytes(c.persistedBytes),
            formatBytes(c.fullBytes),
          ]),
        ),
      ),
    );
    // Failed checkpoints left no directory: the job's failure history says what happened to them.
    if (failures.length > 0) {
      lines.push('', `failed and aborted ${failures.length === 1 ? 'checkpoint' : 'checkpoints'} (the most recent, from ${job}/_failed_checkpoints):`);
      for (const f of failures) {
        lines.push(`  ${f.kind} ${f.id} ${f.status} at ${formatTime(f.timestamp)} after ${f.durationMs} ms${f.final ? ' (final)' : ''}: ${f.error}: ${f.reason}`);
      }
    }
    if (failuresError) lines.push('', `failure history ignored: ${failuresError}`);
    for (const checkpoint of all) lines.push('', ...renderCheckpoint(checkpoint));
  }
  return `${lines.join('\n')}\n`;
}

function renderCheckpoint(c: CheckpointSummary): string[] {
  const lines = [`${c.kind} ${c.path}: ${c.status}`];
  if (c.error) lines.push(`  error: ${c.error}`);
  for (const operator of c.operators) {
    const extra = operator.operatorStateBytes > 0 ? `, operator state ${formatBytes(operator.operatorStateBytes)}` : '';
    lines.push(`  operator ${operator.uid} (${operator.role}): ${operator.files.length} file${operator.files.length === 1 ? '' : 's'}, ${formatBytes(operator.bytes)}${extra}`);
    for (const file of operator.files) if (file.error) lines.push(`    file ${file.file}: ${file.error}`);
    if (operator.states.length === 0) continue;
    const rows = operator.states.map((s) => [
      s.name,
      s.ttl ? `${s.kind} +ttl` : s.kind,
      `${s.serializer} v${s.serializerVersion}`,
      String(s.keys),
      String(s.entries),
      String(s.namespaces),
      formatBytes(s.bytes),
      `${s.keyGroups.length}/${c.maxParallelism ?? '?'}`,
    ]);
    lines.push(...indent(table(['STATE', 'KIND', 'SERIALIZER', 'KEYS', 'ENTRIES', 'WINDOWS', 'SIZE', 'KEY GROUPS'], rows), '    '));
  }
  return lines;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(header), ...rows.map(line)];
}

export function indent(lines: string[], by = '  '): string[] {
  return lines.map((line) => by + line);
}

export function formatTime(ms: number): string {
  // A virtual clock (tests, the playground) starts near 0: show its milliseconds rather than 1970.
  return ms > 1e11 ? new Date(ms).toISOString() : `t=${ms} ms`;
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

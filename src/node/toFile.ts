import { mkdir, open, readFile, readdir, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { CheckpointCorruptedError, errorCode, FileChangedError } from '../core/errors.js';
import type { Flow } from '../core/flow.js';
import type { Json, Sink, SinkWriter } from '../core/types.js';
import { sinkTo } from '../sinks/sinkTo.js';
import { storageError, syncDirectory, writeFileAtomic } from '../storage/fsInternals.js';

/**
 * What one checkpoint wrote: the bytes are in the part file `part` (a sibling of the target) until the checkpoint
 * completes, then appended to the target at byte `base`. A `type`, not an interface, so it is assignable to `Json`.
 */
type Transaction = { id: number; part: string; base: number; size: number };

/** The state a checkpoint holds: the target's committed length once `pending` are committed, in order. */
type ToFileState = { end: number; pending: Transaction[] };

/**
 * An exactly-once sink that writes one line per record to a file (Flink's two-phase-commit FileSink). Lines written
 * between two checkpoints are pre-committed to a durable part file at the barrier and appended to `path` only when
 * that checkpoint completes, so after a crash and restore the file holds each record exactly once.
 *
 * Crash safety rests on two invariants: a transaction's commit (truncate the target to its `base`, append the part,
 * fsync, unlink the part) can be repeated until the unlink is durable; and that unlink is made durable before the next
 * transaction is applied, so a part file that exists means nothing after it reached the target.
 * @example alerts.pipe(toFile('alerts.jsonl', { uid: 'alerts-out', format: (a) => `${a.account},${a.at}` }))
 */
export function toFile<T>(path: string, options: { uid?: string; format?: (value: T) => string } = {}): (input: Flow<T>) => void {
  return sinkTo(fileSink(path, options), { uid: options.uid });
}

/**
 * The sink behind `toFile`, for use with `sinkTo` or in tests of the two-phase commit itself.
 * @example flow.pipe(sinkTo(fileSink('alerts.jsonl'), { uid: 'alerts-out' }))
 */
export function fileSink<T>(path: string, { format = JSON.stringify }: { format?: (value: T) => string } = {}): Sink<T> {
  const target = resolve(path);
  const name = `toFile(${path})`;

  return {
    name,
    async open(context) {
      return openWriter(context.restoredState).catch(typed(name));
    },
  };

  async function openWriter(restoredState: Json | undefined): Promise<SinkWriter<T>> {
    await mkdir(dirname(target), { recursive: true });
    let end = 0;
    if (restoredState === undefined) {
      await createEmpty(target);
    } else {
      const state = checkState(restoredState, name, target);
      // Finish what the restored checkpoint promised, then drop what newer checkpoints committed after it.
      for (const txn of state.pending) await commitTransaction(target, txn, name);
      await syncAndClose(await openAt(target, state.end, name));
      end = state.end;
    }
    await removeParts(target);
    return writer(target, name, end, format);
  }
}

/** Rethrows a file system error as the typed error that names the file and the real cause (see `storageError`). */
const typed = (name: string) => async (error: unknown): Promise<never> => {
  throw await storageError(error, name, 'write');
};

function writer<T>(target: string, name: string, committedEnd: number, format: (value: T) => string): SinkWriter<T> {
  // Lines written since the last barrier: kept as strings so `write` costs one push.
  let lines: string[] = [];
  // The target's length once every pre-committed transaction is committed.
  let end = committedEnd;
  // Pre-committed transactions, oldest first.
  const uncommitted: Transaction[] = [];
  // File work runs one task at a time, so a commit never interleaves with a part write or another commit; after a
  // failure every later task fails too, because committing past a lost transaction would corrupt the file.
  let queue: Promise<unknown> = Promise.resolve();
  const enqueue = <R>(task: () => Promise<R>): Promise<R> => {
    const result = queue.then(task).catch(typed(name));
    queue = result;
    return result;
  };
  const takeLines = (): Buffer => {
    const bytes = Buffer.from(lines.join(''), 'utf8');
    lines = [];
    return bytes;
  };

  return {
    write(value) {
      lines.push(`${format(value)}\n`);
    },
    snapshot(checkpointId) {
      const bytes = takeLines();
      if (bytes.length > 0) {
        const txn: Transaction = { id: checkpointId, part: `${basename(target)}.part-${checkpointId}`, base: end, size: bytes.length };
        end += bytes.length;
        uncommitted.push(txn);
        const state: ToFileState = { end, pending: uncommitted.map((t) => ({ ...t })) };
        return enqueue(async () => {
          await writeFileAtomic(join(dirname(target), txn.part), bytes);
          return state;
        });
      }
      const state: ToFileState = { end, pending: uncommitted.map((t) => ({ ...t })) };
      return enqueue(async () => state);
    },
    commit(checkpointId) {
      return enqueue(async () => {
        while (uncommitted[0] !== undefined && uncommitted[0].id <= checkpointId) {
          await commitTransaction(target, uncommitted[0], name);
          uncommitted.shift();
        }
      });
    },
    finish() {
      const bytes = takeLines();
      return enqueue(async () => {
        for (const txn of uncommitted.splice(0)) await commitTransaction(target, txn, name);
        // Appended without a part file: nothing follows the end of input, and a restore truncates to its own `end`.
        if (bytes.length === 0) return;
        const handle = await openAt(target, end, name);
        try {
          await handle.write(bytes, 0, bytes.length, end);
        } finally {
          await syncAndClose(handle);
        }
        end += bytes.length;
      });
    },
    async abort() {
      lines = [];
      // Part files stay: a restore may still commit them. Waiting lets the next attempt's recovery run alone.
      await queue.catch(() => undefined);
    },
  };
}

/** Applies a transaction; a missing part file means it was applied and its part unlinked before. */
async function commitTransaction(target: string, txn: Transaction, name: string): Promise<void> {
  const part = join(dirname(target), txn.part);
  let bytes: Buffer;
  try {
    bytes = await readFile(part);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  if (bytes.length !== txn.size) {
    throw new CheckpointCorruptedError(`${name}: part file ${part} holds ${bytes.length} bytes, the checkpoint expects ${txn.size}`);
  }
  const handle = await openAt(target, txn.base, name);
  try {
    await handle.write(bytes, 0, bytes.length, txn.base);
  } finally {
    await syncAndClose(handle);
  }
  await unlink(part);
  await syncDirectory(dirname(target));
}

/** Opens the target truncated to `length`, refusing to pad it: a shorter file lost committed output. */
async function openAt(target: string, length: number, name: string): Promise<FileHandle> {
  const handle = await open(target, 'r+').catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT' && length === 0) return open(target, 'w');
    if (errorCode(error) === 'ENOENT') throw new FileChangedError(`${name}: ${target} was deleted; it should hold ${length} committed bytes`, { cause: error });
    throw error;
  });
  const { size } = await handle.stat();
  if (size < length) {
    await handle.close();
    throw new FileChangedError(`${name}: ${target} has ${size} bytes but ${length} were committed; it was truncated or replaced by something else`);
  }
  if (size > length) await handle.truncate(length);
  return handle;
}

async function syncAndClose(handle: FileHandle): Promise<void> {
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A fresh run starts from an empty target. */
async function createEmpty(target: string): Promise<void> {
  await syncAndClose(await open(target, 'w'));
  await syncDirectory(dirname(target));
}

/** Deletes part files (and their unfinished temp files) left by attempts whose checkpoints never completed. */
async function removeParts(target: string): Promise<void> {
  const prefix = `${basename(target)}.part-`;
  const dir = dirname(target);
  for (const entry of await readdir(dir)) {
    if (entry.startsWith(prefix) || entry.startsWith(`.${prefix}`)) await unlink(join(dir, entry)).catch(() => undefined);
  }
}

/** A restored state is checked before it is acted on: its part files must be the ones this sink names itself. */
function checkState(state: Json, name: string, target: string): ToFileState {
  const isLength = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  const candidate = state as Partial<ToFileState> | null;
  const valid =
    candidate !== null &&
    typeof candidate === 'object' &&
    isLength(candidate.end) &&
    Array.isArray(candidate.pending) &&
    candidate.pending.every(
      (txn) =>
        typeof txn === 'object' && txn !== null && isLength(txn.id) && isLength(txn.base) && isLength(txn.size) &&
        txn.part === `${basename(target)}.part-${txn.id}`,
    );
  if (!valid) throw new CheckpointCorruptedError(`${name}: the checkpoint's sink state is not a toFile state: ${JSON.stringify(state)?.slice(0, 200)}`);
  return candidate as ToFileState;
}

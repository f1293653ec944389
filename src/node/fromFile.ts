import { open, stat, type FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CheckpointCorruptedError, errorCode, FileChangedError, JobDefinitionError, MalformedRecordError, SourceNotFoundError } from '../core/errors.js';
import type { Json, Source, SourceReader, SourceSplit } from '../core/types.js';
import { fromSplits } from '../sources/fromSplits.js';

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

export interface FromFileOptions<T> {
  parse?: (line: string) => T;
  /** Bytes per read. */
  chunkSize?: number;
  /**
   * Line-aligned byte ranges per file, read side by side by the source's subtasks (`job.source(src, { parallelism })`):
   * a range starts after the first newline at or after its first byte (at 0, at the file's start) and ends with the
   * line that crosses its last byte. Given, or with several files, the source has splits (one per file by default).
   */
  splits?: number;
}

/**
 * A replayable source of the lines of UTF-8 text files (`\n` or `\r\n` separated; empty lines are skipped). Its
 * offset is a byte position, so after a restore it resumes exactly after the last line the checkpoint covered.
 * A file is read in blocks of `chunkSize` bytes, never whole, so it may be larger than memory. Several files, or
 * `{ splits: n }`, make a source with splits: each file, or each of its n byte ranges, is a split.
 * @example job.source(fromFile('tx.jsonl', { parse: JSON.parse }), { uid: 'tx' })
 */
export function fromFile<T = string>(paths: string | readonly string[], { parse, chunkSize = 64 * 1024, splits }: FromFileOptions<T> = {}): Source<T> {
  const name = `fromFile(${typeof paths === 'string' ? paths : paths.join(', ')})`;
  if (!Number.isInteger(chunkSize) || chunkSize <= 0) {
    throw new JobDefinitionError(`${name}: chunkSize must be a positive integer number of bytes, got ${String(chunkSize)}`);
  }
  if (splits !== undefined && !(Number.isInteger(splits) && splits >= 1)) throw new JobDefinitionError(`${name}: splits must be an integer ≥ 1, got ${String(splits)}`);
  if (typeof paths !== 'string' && paths.length === 0) throw new JobDefinitionError(`${name}: give at least one file`);
  const parseLine = parse ?? ((line: string) => line as T);
  // `fatal` so that bytes that are not UTF-8 make a clear error rather than silently becoming U+FFFD.
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const lines = (file: string, range: ByteRange) =>
    lineReader(opener(name, file, range.start), range, chunkSize, (bytes: Uint8Array, offset: number): T => {
      try {
        return parseLine(decoder.decode(bytes));
      } catch (cause) {
        throw new MalformedRecordError(`${name}: the line at byte ${offset} of ${file} cannot be parsed: ${String(cause)}`, { cause });
      }
    });

  if (typeof paths === 'string' && splits === undefined) {
    const file = resolve(paths);
    return {
      name,
      replayable: true,
      async open({ restoredOffset }) {
        const start = byteOffset(restoredOffset ?? 0, name);
        // Only a stat here: the file is opened by the first read. A job opens every source before it subscribes to any,
        // and drops them unread when a later part fails to start (a sink refusing its restored state, say); a reader
        // that holds no descriptor until it reads cannot leak one then.
        reaches(await found(name, file, () => stat(file)), start, name, file);
        return lines(file, { start, end: Number.POSITIVE_INFINITY, skipFirst: false });
      },
    };
  }
  const files = typeof paths === 'string' ? [paths] : paths;
  return fromSplits<T>(name, {
    async list() {
      const listed: SourceSplit[] = [];
      for (const path of files) {
        const { size } = await found(name, resolve(path), () => stat(resolve(path)));
        listed.push(...byteRanges(path, size, splits));
      }
      return listed;
    },
    async open(split, { restoredOffset }) {
      const { path, start, end } = split.description as unknown as FileSplit;
      const file = resolve(path);
      const from = restoredOffset === undefined ? start : byteOffset(restoredOffset, name);
      reaches(await found(name, file, () => stat(file)), from, name, file);
      // A fresh range that starts inside the file skips the line it starts in: the range before reads that one.
      return lines(file, { start: from, end: end ?? Number.POSITIVE_INFINITY, skipFirst: restoredOffset === undefined && start > 0 });
    },
    fromOffset(offset, listed) {
      if (files.length > 1) {
        throw new CheckpointCorruptedError(`${name}: the checkpoint holds the byte offset ${JSON.stringify(offset)} of a single file, which several files cannot resume at; start the job without restore`);
      }
      const position = byteOffset(offset, name);
      return listed.map(({ id, description }) => {
        const { start, end } = description as unknown as FileSplit;
        // The range reads the lines that start in (start, end], or [0, end] for the first.
        if (end !== null && end < position) return { id, offset: end, finished: true };
        if (start > 0 && start >= position) return { id, offset: null, finished: false };
        return { id, offset: position, finished: false };
      });
    },
  });
}

/** A split of a file: the lines that start in `(start, end]` (`[0, end]` from the start); `end` null: to its end. */
interface FileSplit {
  path: string;
  start: number;
  end: number | null;
}

/**
 * `ranges` byte ranges of a file of `size` bytes; one range covers the whole file, however it grows, as a source
 * without splits does. A range's id names its bytes, so a checkpoint of other ranges is refused, not misread.
 */
function byteRanges(path: string, size: number, ranges = 1): SourceSplit[] {
  if (ranges === 1) return [{ id: path, description: { path, start: 0, end: null } }];
  return Array.from({ length: ranges }, (_, k) => {
    const start = Math.floor((k * size) / ranges);
    const end = Math.floor(((k + 1) * size) / ranges);
    return { id: `${path}#${start}-${end}`, description: { path, start, end } };
  });
}

function byteOffset(offset: Json, name: string): number {
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) {
    throw new CheckpointCorruptedError(`${name}: the checkpoint holds offset ${JSON.stringify(offset)}, which is not a byte offset`);
  }
  return offset;
}

/** Opens `file` for a reader that starts at `start`, checking again that it still reaches there. */
function opener(name: string, file: string, start: number): () => Promise<FileHandle> {
  return async () => {
    const handle = await found(name, file, () => open(file, 'r'));
    // Checked again: the file may have been replaced between the start and the first read.
    await handle.stat().then((stats) => reaches(stats, start, name, file)).catch(async (error: unknown) => {
      await handle.close();
      throw error;
    });
    return handle;
  };
}

/** The result of a file system call on `file`, a missing file being a `SourceNotFoundError` that names it. */
async function found<R>(name: string, file: string, call: () => Promise<R>): Promise<R> {
  try {
    return await call();
  } catch (error) {
    if (errorCode(error) === 'ENOENT') throw new SourceNotFoundError(`${name}: file ${file} does not exist`, { cause: error });
    throw error;
  }
}

/** A file shorter than a restored offset was truncated or replaced since the checkpoint. */
function reaches({ size }: { size: number }, start: number, name: string, file: string): void {
  if (start > size) {
    throw new FileChangedError(
      `${name}: the checkpoint resumes at byte ${start} but ${file} has ${size} bytes; the file was truncated or replaced since the checkpoint`,
    );
  }
}

/** Where a line reader starts and stops: the lines that start from `start` up to `end` (inclusive). */
interface ByteRange {
  start: number;
  end: number;
  /** Skip through the first newline at or after `start` first: the line `start` lies in belongs to the range before. */
  skipFirst: boolean;
}

/** Reads whole lines of a byte range, keeping only the unfinished last line of a block between reads. */
function lineReader<T>(
  openFile: () => Promise<FileHandle>,
  { start, end, skipFirst }: ByteRange,
  chunkSize: number,
  toRecord: (line: Uint8Array, offset: number) => T,
): SourceReader<T> {
  // Bytes read but not yet consumed, and the file position of `buffer[0]`.
  let buffer = new Uint8Array(0);
  let bufferStart = start;
  // Where the next block is read from, and whether the file has been read to its end.
  let position = start;
  let eof = false;
  // Position just after the last line returned: the offset a checkpoint saves. Null until the first line is
  // skipped: resuming at `start` would read that line, so the range is saved as not started.
  let offset: number | null = skipFirst ? null : start;
  let skipping = skipFirst;
  // The next line starts past `end`: the range is read.
  let past = false;
  let closed = false;
  // Opened by the first read; `close` waits for an open still under way, so a handle opened late is closed too.
  let handle: Promise<FileHandle> | undefined;

  const readBlock = async (): Promise<void> => {
    const block = new Uint8Array(chunkSize);
    const { bytesRead } = await (await (handle ??= openFile())).read(block, 0, chunkSize, position);
    if (bytesRead === 0) {
      eof = true;
      return;
    }
    position += bytesRead;
    const joined = new Uint8Array(buffer.length + bytesRead);
    joined.set(buffer, 0);
    joined.set(block.subarray(0, bytesRead), buffer.length);
    buffer = joined;
  };

  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    const opened = await handle?.catch(() => undefined);
    await opened?.close();
  };

  return {
    async read(max) {
      const records: T[] = [];
      let cursor = 0;
      // The offset moves only when the records are returned: a barrier may go out while this read awaits a block,
      // and its offset must not cover records that reach the flow after it.
      let consumed = offset;
      while (records.length < max && !past) {
        let newline = buffer.indexOf(NEWLINE, cursor);
        if (newline < 0 && !eof) {
          buffer = buffer.subarray(cursor);
          bufferStart += cursor;
          cursor = 0;
          await readBlock();
          continue;
        }
        // A final line without a newline still counts.
        if (newline < 0) newline = buffer.length;
        if (cursor >= buffer.length) break;
        const lineStart = bufferStart + cursor;
        if (skipping) {
          skipping = false;
          cursor = Math.min(newline + 1, buffer.length);
          consumed = bufferStart + cursor;
          continue;
        }
        if (lineStart > end) {
          past = true;
          break;
        }
        const lineEnd = newline > cursor && buffer[newline - 1] === CARRIAGE_RETURN ? newline - 1 : newline;
        const bytes = buffer.subarray(cursor, lineEnd);
        cursor = Math.min(newline + 1, buffer.length);
        if (bytes.length === 0) continue;
        records.push(toRecord(bytes, lineStart));
        consumed = bufferStart + cursor;
      }
      buffer = buffer.subarray(cursor);
      bufferStart += cursor;
      if (records.length === 0 && ((eof && buffer.length === 0) || past)) {
        await close();
        return null;
      }
      offset = consumed;
      return records;
    },
    offset: () => offset,
    close,
  };
}

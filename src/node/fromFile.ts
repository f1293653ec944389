import { open, stat, type FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CheckpointCorruptedError, errorCode, FileChangedError, JobDefinitionError, MalformedRecordError, SourceNotFoundError } from '../core/errors.js';
import type { Source, SourceReader } from '../core/types.js';

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * A replayable source of the lines of a UTF-8 text file (`\n` or `\r\n` separated; empty lines are skipped). Its
 * offset is a byte position, so after a restore it resumes exactly after the last line the checkpoint covered.
 * The file is read in blocks of `chunkSize` bytes, never whole, so it may be larger than memory.
 * @example job.source(fromFile('tx.jsonl', { parse: JSON.parse }), { uid: 'tx' })
 */
export function fromFile<T = string>(
  path: string,
  { parse, chunkSize = 64 * 1024 }: { parse?: (line: string) => T; chunkSize?: number } = {},
): Source<T> {
  if (!Number.isInteger(chunkSize) || chunkSize <= 0) {
    throw new JobDefinitionError(`fromFile(${path}): chunkSize must be a positive integer number of bytes, got ${String(chunkSize)}`);
  }
  const file = resolve(path);
  const name = `fromFile(${path})`;
  const parseLine = parse ?? ((line: string) => line as T);
  // `fatal` so that bytes that are not UTF-8 make a clear error rather than silently becoming U+FFFD.
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const toRecord = (bytes: Uint8Array, offset: number): T => {
    try {
      return parseLine(decoder.decode(bytes));
    } catch (cause) {
      throw new MalformedRecordError(`${name}: the line at byte ${offset} of ${file} cannot be parsed: ${String(cause)}`, { cause });
    }
  };

  return {
    name,
    replayable: true,
    async open({ restoredOffset }) {
      const start = restoredOffset ?? 0;
      if (typeof start !== 'number' || !Number.isSafeInteger(start) || start < 0) {
        throw new CheckpointCorruptedError(`${name}: the checkpoint holds offset ${JSON.stringify(start)}, which is not a byte offset`);
      }
      // Only a stat here: the file is opened by the first read. A job opens every source before it subscribes to any,
      // and drops them unread when a later part fails to start (a sink refusing its restored state, say); a reader
      // that holds no descriptor until it reads cannot leak one then.
      reaches(await found(name, file, () => stat(file)), start, name, file);
      return lineReader(
        async () => {
          const handle = await found(name, file, () => open(file, 'r'));
          // Checked again: the file may have been replaced between the start and the first read.
          await handle.stat().then((stats) => reaches(stats, start, name, file)).catch(async (error: unknown) => {
            await handle.close();
            throw error;
          });
          return handle;
        },
        start,
        chunkSize,
        toRecord,
      );
    },
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

/** Reads whole lines from `start`, keeping only the unfinished last line of a block between reads. */
function lineReader<T>(
  openFile: () => Promise<FileHandle>,
  start: number,
  chunkSize: number,
  toRecord: (line: Uint8Array, offset: number) => T,
): SourceReader<T> {
  // Bytes read but not yet consumed, and the file position of `buffer[0]`.
  let buffer = new Uint8Array(0);
  let bufferStart = start;
  // Where the next block is read from, and whether the file has been read to its end.
  let position = start;
  let eof = false;
  // Position just after the last line returned: the offset a checkpoint saves.
  let offset = start;
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
      while (records.length < max) {
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
        const end = newline > cursor && buffer[newline - 1] === CARRIAGE_RETURN ? newline - 1 : newline;
        const bytes = buffer.subarray(cursor, end);
        cursor = Math.min(newline + 1, buffer.length);
        if (bytes.length === 0) continue;
        records.push(toRecord(bytes, lineStart));
        consumed = bufferStart + cursor;
      }
      buffer = buffer.subarray(cursor);
      bufferStart += cursor;
      if (records.length === 0 && eof && buffer.length === 0) {
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

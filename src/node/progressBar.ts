import type * as CliProgress from 'cli-progress';
import { lazyRequire } from './lazyRequire.js';
import type { ProgressListener } from '../core/progress.js';

/** cli-progress, loaded when a bar is first drawn, not in every worker thread that imports weir/node. */
const cliProgress = lazyRequire<typeof CliProgress>('cli-progress');

export interface ProgressBarOptions {
  /** Where the bar is drawn; `process.stderr` by default, so that it never mixes with a report on stdout. */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Draw it even when the stream is not a terminal (a bar is drawn on a TTY only by default). */
  force?: boolean;
}

/** A progress listener that draws a bar, and `stop()` to end it early (when the work failed). */
export interface ProgressBar extends ProgressListener {
  stop(): void;
}

/**
 * A progress listener drawing a cli-progress bar for long work on files (`weir inspect`, the State Processor's
 * `write` and `deriveSavepoint`), on a terminal only: when the stream is not a TTY (a pipe, a file, CI) it draws
 * nothing unless `force`d. The bar ends by itself once `done` reaches `total`.
 * @example
 * import { progressBar } from 'weir/node';
 * const progress = progressBar('writing savepoint');
 * await writer.write(storage, 'savepoints/v2', { onProgress: progress });
 */
export function progressBar(label: string, options: ProgressBarOptions = {}): ProgressBar {
  const { stream = process.stderr, force = false } = options;
  if (!stream.isTTY && !force) return Object.assign(() => undefined, { stop: () => undefined });
  const bar = new (cliProgress().SingleBar)({
    stream,
    format: `${label} [{bar}] {value}/{total} {file}`,
    noTTYOutput: force && !stream.isTTY,
    clearOnComplete: true,
    hideCursor: true,
    // Redrawn on a timer at most this often, not per file: a checkpoint may have thousands of small files.
    fps: 20,
  });
  let running = false;
  const stop = () => {
    if (!running) return;
    running = false;
    bar.stop();
  };
  const listener = ({ done, total, file }: { done: number; total: number; file: string }) => {
    const shown = { file: file.slice(-40) };
    if (!running) {
      running = true;
      bar.start(total, done, shown);
    } else {
      bar.setTotal(total);
      bar.update(done, shown);
    }
    if (done >= total) stop();
  };
  return Object.assign(listener, { stop });
}

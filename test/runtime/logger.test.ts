// createJob's `logger` option: a pino-compatible logger gets a line per job event; without one weir prints nothing.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { JobDefinitionError, collect, createJob, fromArray, map, type JobLogger } from 'weir';
import { readings, skippingScheduler, type Reading } from '../checkpoint/fixtures';

afterEach(() => vi.restoreAllMocks());

/** A logger recording (level, obj, msg) as pino's methods take them. */
function recordingLogger() {
  const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (obj: object, msg: string) => void lines.push({ level, obj: obj as Record<string, unknown>, msg });
  const logger: JobLogger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, lines };
}

/** A job over the readings whose map fails once at record 70, restarting after 5 ms. */
function flakyJob(options: { logger?: JobLogger } = {}) {
  let failures = 0;
  const job = createJob({
    name: 'logged',
    scheduler: skippingScheduler(),
    restart: { strategy: 'fixed-delay', attempts: 1, delay: 5 },
    checkpoints: {},
    ...options,
  });
  job
    .source(fromArray(readings), { uid: 'in' })
    .pipe(
      map((r: Reading) => {
        if (r.n === 70 && failures++ === 0) throw new Error('flaky');
        return r;
      }, { uid: 'flaky' }),
      collect<Reading>().sink({ uid: 'out' }),
    );
  return job;
}

describe('the logger option', () => {
  it('logs the start, a restart as a warning with its cause, checkpoints at debug and the stop', async () => {
    const { logger, lines } = recordingLogger();
    await flakyJob({ logger }).start().done;
    expect(lines.map(({ level, msg }) => `${level}: ${msg}`)).toEqual([
      "info: job 'logged' started",
      "warn: job 'logged' failed and restarts in 5 ms (restart 1): operator 'flaky' (map) of job 'logged' failed: Error: flaky; the thrown error is this error's cause",
      "debug: job 'logged' completed checkpoint 1",
      "info: job 'logged' finished",
    ]);
    expect(lines[1]!.obj).toMatchObject({ job: 'logged', restarts: 1, delayMs: 5, err: expect.any(Error) });
    expect(lines[2]!.obj).toMatchObject({ job: 'logged', checkpoint: 1, kind: 'checkpoint', status: 'completed', bytes: expect.any(Number) });
  });

  it('prints nothing by default', async () => {
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((method) => vi.spyOn(console, method).mockImplementation(() => undefined));
    const write = vi.spyOn(process.stdout, 'write');
    await flakyJob().start().done;
    for (const spy of [...spies, write]) expect(spy).not.toHaveBeenCalled();
  });

  it('never fails the job when it throws', async () => {
    const throwing = () => {
      throw new Error('the log is full');
    };
    const result = await flakyJob({ logger: { debug: throwing, info: throwing, warn: throwing, error: throwing } }).start().done;
    expect(result).toMatchObject({ status: 'finished', restarts: 1 });
  });

  it('is checked when the job is created', () => {
    expect(() => createJob({ name: 'logged', logger: { info: () => undefined } as unknown as JobLogger })).toThrow(JobDefinitionError);
    expect(() => createJob({ name: 'logged', logger: { info: () => undefined } as unknown as JobLogger })).toThrow(/logger must have debug, info, warn and error methods/);
  });
});

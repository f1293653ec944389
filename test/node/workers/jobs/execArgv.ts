// A job module for the worker-thread tests: worker 0 writes the Node flags it was started with (process.execArgv)
// and its thread id to the file named in WEIR_TEST_JOB, from a sink (sinks run in worker 0).
import { threadId } from 'node:worker_threads';
import { createJob, fromArray } from '../../../../src/index.js';
import { toFile } from '../../../../src/node/index.js';

export default function execArgv() {
  const { name, out } = JSON.parse(process.env.WEIR_TEST_JOB!) as { name: string; out: string };
  const job = createJob({ name });
  job.source(fromArray([1]), { uid: 'one' }).pipe(toFile(out, { uid: 'out', format: () => JSON.stringify({ threadId, execArgv: process.execArgv }) }));
  return job;
}

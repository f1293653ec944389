// A job module that builds another graph in each worker (a uid from the worker index): the workers must refuse it.
import { collect, createJob, fromArray, map } from '../../../../src/index.js';

export default function unstableGraph({ worker }: { worker: number | undefined }) {
  const job = createJob({ name: 'unstable', restart: { strategy: 'fixed-delay', attempts: 3, delay: 0 } });
  job
    .source(fromArray([1, 2, 3]), { uid: 'numbers' })
    .pipe(map((n: number) => n + 1, { uid: worker === undefined ? 'map-main' : `map-worker-${worker}` }), collect<number>().sink());
  return job;
}

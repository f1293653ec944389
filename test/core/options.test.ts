// Unknown option names, as plain JavaScript (no type checker) lets them through: each is rejected with a
// JobDefinitionError naming it and the closest known name.
import { describe, expect, it } from 'vitest';
import {
  JobDefinitionError,
  aggregate,
  collect,
  createJob,
  filter,
  flatMap,
  fold,
  forEach,
  fromArray,
  keyBy,
  map,
  memoryCheckpointStorage,
  process,
  reduce,
  tumbling,
  window,
} from 'weir';

/** What TypeScript would refuse: an object with a misspelt option, as a JS caller passes it. */
const js = (value: unknown): never => value as never;

describe('unknown option names', () => {
  it.each([
    ['job options', () => createJob(js({ name: 'j', checkpoint: { interval: 10 } })), /createJob \(job 'j'\): unknown option 'checkpoint'; did you mean 'checkpoints'\?/],
    ['checkpoint options', () => createJob({ name: 'j', checkpoints: js({ intervall: 10 }) }), /job 'j': checkpoints: unknown option 'intervall'; did you mean 'interval'\?/],
    ['restart options', () => createJob({ name: 'j', restart: js({ strategy: 'fixed-delay', attempt: 3 }) }), /restart \(strategy 'fixed-delay'\): unknown option 'attempt'; did you mean 'attempts'\?/],
    ['source options', () => createJob({ name: 'j' }).source(fromArray([1]), js({ uuid: 'in' })), /source: unknown option 'uuid'; did you mean 'uid'\?/],
    ['map options', () => map((n: number) => n, js({ id: 'm' })), /map: unknown option 'id'; did you mean 'uid'\?/],
    ['filter options', () => filter((n: number) => n > 0, js({ uids: 'f' })), /filter: unknown option 'uids'/],
    ['flatMap options', () => flatMap((n: number) => [n], js({ Uid: 'f' })), /did you mean 'uid'\?/],
    ['reduce options', () => reduce((a: number, b: number) => a + b, js({ queriable: 'sum' })), /reduce: unknown option 'queriable'; did you mean 'queryable'\?/],
    ['fold options', () => fold(0, (a: number, b: number) => a + b, js({ paralellism: 2 })), /fold: unknown option 'paralellism'; did you mean 'parallelism'\?/],
    ['aggregate options', () => aggregate(js({}), js({ serialiser: undefined })), /did you mean 'serializer'\?/],
    ['process options', () => process(js({ onElement: () => undefined }), js({ state: [] })), /process: unknown option 'state'; did you mean 'states'\?/],
    ['window options', () => window(tumbling(10), js({ lateness: 5 })), /window: unknown option 'lateness'/],
    ['sink options', () => forEach(() => undefined, js({ uuid: 'out' })), /forEach: unknown option 'uuid'; did you mean 'uid'\?/],
    ['collect sink options', () => collect().sink(js({ name: 'out' })), /unknown option 'name' \(known options: 'uid'\)/],
  ])('%s', (_what, define, message) => {
    expect(define).toThrow(JobDefinitionError);
    expect(define).toThrow(message);
  });

  function startable(name: string) {
    const job = createJob({ name, checkpoints: { storage: memoryCheckpointStorage() } });
    job.source(fromArray([1, 2]), { uid: 'in' }).pipe(keyBy((n: number) => String(n)), reduce((a: number, b: number) => a + b, { uid: 'sum' }), forEach(() => undefined));
    return job;
  }

  it('start and restore options', () => {
    expect(() => startable('s').start(js({ restor: 'latest' }))).toThrow(/job 's': start: unknown option 'restor'; did you mean 'restore'\?/);
    expect(() => startable('s').start({ restore: js({ savepont: 'x' }) })).toThrow(/start restore: unknown option 'savepont'; did you mean 'savepoint'\?/);
  });

  it('savepoint and stop options, rejected without stopping the job', async () => {
    const running = startable('p').start();
    await expect(running.savepoint(js({ dir: 'savepoints' }))).rejects.toThrow(/job 'p': savepoint: unknown option 'dir' \(known options: 'path', 'storage'\)/);
    await expect(running.stop(js({ savePoint: { path: 'x' } }))).rejects.toThrow(/job 'p': stop: unknown option 'savePoint'; did you mean 'savepoint'\?/);
    await expect(running.stop({ savepoint: js({ paht: 'x' }) })).rejects.toThrow(JobDefinitionError);
    await expect(running.done).resolves.toMatchObject({ status: 'finished' });
  });

  it('known names pass, and names far from every known one get no suggestion', () => {
    expect(() => createJob({ name: 'ok', checkpoints: { interval: 10, retain: 2 }, restart: { strategy: 'fixed-delay', attempts: 1, delay: 0 } })).not.toThrow();
    expect(() => createJob(js({ name: 'j', zzzzzzzz: 1 }))).toThrow(/unknown option 'zzzzzzzz' \(known options: /);
  });
});

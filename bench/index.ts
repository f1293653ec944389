import { fileURLToPath } from 'node:url';
import { alignment } from './alignment';
import { async } from './async';
import { browser } from './browser';
import { checkpointing } from './checkpointing';
import { connectors } from './connectors';
import { connectorsPostgres } from './connectors-postgres';
import { connectorsRedis } from './connectors-redis';
import { curves } from './curves';
import { keyedReduce } from './keyedReduce';
import { incremental } from './incremental';
import { largeState } from './largeState';
import { nexmark } from './nexmark';
import { observability } from './observability';
import { parallel } from './parallel';
import { printTable, writeResults, type Result } from './report';
import { query } from './query';
import { restore } from './restore';
import { rxjsInterop } from './rxjsInterop';
import { savepoint } from './savepoint';
import { scaleout } from './scaleout';
import { snapshot } from './snapshot';
import { windows } from './windows';

/**
 * `npm run bench [-- <group>…]`: runs the named groups (all by default), each comparing weir side by side with the
 * plain-RxJS / plain-Node way of doing the same job in this process, prints a table and writes bench/results.json.
 * `curves` draws growth curves instead (bench/curves.ts) and runs only when named.
 */
const groups: Record<string, () => Promise<Result[]>> = {
  'keyed-reduce': keyedReduce,
  checkpointing,
  snapshot,
  'large-state': largeState,
  incremental,
  alignment,
  savepoint,
  restore,
  windows,
  nexmark,
  browser,
  query,
  'rxjs-interop': rxjsInterop,
  async,
  // NATS, Redis and PostgreSQL on loopback, as every machine here runs them.
  connectors: async () => [...(await connectors()), ...(await connectorsRedis()), ...(await connectorsPostgres())],
  observability,
  parallel,
  // NATS on loopback: key-group ownership moving between members.
  scaleout,
  curves,
};

/** Groups run only when named: `curves` takes several minutes (one process per point, up to 10⁷ keys). */
const onlyWhenNamed = new Set(['curves']);

const requested = process.argv.slice(2).filter((arg) => arg !== '--');
const unknown = requested.filter((name) => !(name in groups));
if (unknown.length > 0) {
  console.error(`unknown bench group(s): ${unknown.join(', ')}; known: ${Object.keys(groups).join(', ')}`);
  process.exit(2);
}

const results: Result[] = [];
const started = performance.now();
for (const name of requested.length > 0 ? requested : Object.keys(groups).filter((group) => !onlyWhenNamed.has(group))) {
  const groupStart = performance.now();
  console.error(`[bench] ${name}…`);
  results.push(...(await groups[name]!()));
  console.error(`[bench] ${name} took ${((performance.now() - groupStart) / 1000).toFixed(1)} s`);
}
console.error(`[bench] total ${((performance.now() - started) / 1000).toFixed(1)} s`);
printTable(results);
const file = fileURLToPath(new URL('./results.json', import.meta.url));
await writeResults(file, results);
console.log(`\nwrote ${file}`);

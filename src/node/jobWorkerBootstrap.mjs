// The first module of every worker thread of a job started with `startJob`: imports the modules the job asked for
// first (a TypeScript loader, say), then the engine's worker entry, which builds the job from its module. Plain
// JavaScript with node: imports only, so that Node runs it as it is, from the sources and from the build.
import { workerData } from 'node:worker_threads';

/** @type {{ preload: string[], entry: string }} */
const { preload, entry } = workerData;
for (const url of preload) await import(url);
await import(entry);

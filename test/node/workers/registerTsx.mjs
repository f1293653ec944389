// Preloaded in each worker of the worker-thread tests: Node runs the job modules and the engine from TypeScript
// sources, as vitest does on the main thread.
import { register } from 'tsx/esm/api';

register();

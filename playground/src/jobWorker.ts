// A playground job worker: the job is the editor's code, which cannot be a module of the app, so this one fixed
// module (bundled as the app's own `new Worker(new URL('./jobWorker.ts', import.meta.url))`) gets the code in its
// name and compiles it as the page does (`new Function`), with the same harness. The page's IndexedDB storage does
// the checkpoints (workers write through the page); the one built here is never written.
import { memoryCheckpointStorage, runJobWorker } from 'weir/browser';
import { buildRun, type BuiltRun } from './harness';
import { workerBridge, type WorkerInit } from './workerBridge';

const init = JSON.parse(self.name) as WorkerInit;
let built: BuiltRun | undefined;
const bridge = workerBridge(init, () => built?.arm());
runJobWorker(() => {
  built = buildRun({ code: init.code, jobName: init.jobName, storage: memoryCheckpointStorage(), control: bridge.control, hooks: bridge.hooks, onUserError: bridge.onUserError });
  return built.job;
});

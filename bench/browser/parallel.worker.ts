// The module Web Worker of `browser/parallel-2-vs-1-workers`: builds the page's job from the settings in its name.
import { runJobWorker } from 'weir/browser';
import { parallelJob, type BrowserParallelSettings } from './parallelJob';

runJobWorker(parallelJob(JSON.parse(self.name) as BrowserParallelSettings));

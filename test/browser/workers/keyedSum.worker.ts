// The module Web Worker of the browser worker tests: its settings come in the worker's name (the test's factory
// sets it), so the worker builds the same job the page built.
import { runJobWorker } from 'weir/browser';
import { keyedSum, type KeyedSumSettings } from './keyedSum';

runJobWorker(keyedSum(JSON.parse(self.name) as KeyedSumSettings));

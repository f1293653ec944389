import { indexedDbCheckpointStorage, keyGroupRangeFor, NonRestoredStateError, type CheckpointStats, type StartOptions } from 'weir/browser';
import { inspectStorage } from '../../src/inspector/readCheckpoint';
import { createEditor, syntaxErrorPosition } from './editor';
import { EXAMPLES, type Example } from './examples';
import { expectedSums, lineOf, startRun, UserCodeError, type PlaygroundRun } from './harness';
import { createLiveView } from './liveView';
import { createTimeline, type TimelinePoint } from './timeline';
import { el, formatBytes, formatValue } from './values';
import './style.css';

/** The IndexedDB database the playground checkpoints to; the inspector opens the same one. */
export const PLAYGROUND_DB = 'weir-playground';
const storage = indexedDbCheckpointStorage({ dbName: PLAYGROUND_DB });
const saved = (what: string, id: string) => `weir-playground:${what}:${id}`;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const select = $<HTMLSelectElement>('example');
const rate = $<HTMLInputElement>('rate');
const workersCount = $<HTMLSelectElement>('workers-count');
workersCount.value = localStorage.getItem('weir-playground:workers') ?? '0';
const errorBox = $<HTMLDivElement>('error');
const outputList = $<HTMLOListElement>('output');

for (const example of EXAMPLES) select.append(new Option(example.title, example.id));
let example: Example = EXAMPLES.find((e) => e.id === localStorage.getItem('weir-playground:example')) ?? EXAMPLES[0]!;
select.value = example.id;
rate.value = localStorage.getItem('weir-playground:rate') ?? '50';

const editor = createEditor($('editor'), localStorage.getItem(saved('code', example.id)) ?? example.code, () => {
  localStorage.setItem(saved('code', example.id), editor.getCode());
});
const timeline = createTimeline($('timeline'));

/** The live run; `shown` is the run the status panel describes, kept after it ended. */
let run: PlaygroundRun | undefined;
let shown: PlaygroundRun | undefined;
let status = 'idle';
let seenRestarts = 0;
/** Attempts of the live run whose restore has been reported (output line and chart marker). */
let seenAttempts = 0;
let checkpoints: TimelinePoint[] = [];
let lastCheckpoint: CheckpointStats | undefined;
let expected: ((offset: number) => number) | undefined;
let subscription: { unsubscribe(): void } | undefined;
/** Set when the live run was started with allowNonRestoredState: what the checkpoint held that the job dropped. */
let dropped: string | undefined;

function showError(message: string, line?: number, action?: { id: string; label: string; run: () => void }) {
  errorBox.hidden = false;
  errorBox.replaceChildren(el('span', line === undefined ? message : `line ${line}: ${message}`));
  if (action) {
    const button = el('button', action.label);
    button.id = action.id;
    button.addEventListener('click', action.run);
    const actions = el('div', undefined, 'error-actions');
    actions.append(button);
    errorBox.append(actions);
  }
  editor.markError(line ?? null);
}

/**
 * The engine's advice for a NonRestoredStateError is an API option; here it becomes a button that starts the job the
 * same way with `allowNonRestoredState: true`, and the message says what the page offers instead.
 */
function showNonRestoredState(error: NonRestoredStateError, restore: StartOptions['restore']) {
  const what = `${error.checkpoint ?? 'the checkpoint'} holds state for operators this job does not have: ${error.uids.map((uid) => `'${uid}'`).join(', ')}`;
  showError(
    `${what}.\nGive those operators their uids back in the editor and press Run, or restore without their state (Reset state starts from nothing):`,
    undefined,
    {
      id: 'allow-non-restored',
      label: 'Restore, dropping state of removed operators',
      run: () => void start(restore, { dropping: what }),
    },
  );
}

function clearError() {
  errorBox.hidden = true;
  errorBox.textContent = '';
  editor.markError(null);
}

function addOutput(text: string, className?: string) {
  outputList.prepend(el('li', text, className));
  while (outputList.childElementCount > 150) outputList.lastElementChild!.remove();
}

async function endRun(how: 'cancel' | 'stop' = 'cancel') {
  const current = run;
  run = undefined;
  // Unsubscribed once the run ended: a stop's final checkpoint is still charted.
  if (current) await (how === 'stop' ? current.running.stop() : current.running.cancel()).catch(() => undefined);
  subscription?.unsubscribe();
  subscription = undefined;
}

/** Seeds the timeline with the retained checkpoints of the job (after a reload, say). */
async function loadHistory(jobName: string) {
  try {
    const [summary] = await inspectStorage(storage, { jobs: [jobName] });
    checkpoints = (summary?.checkpoints ?? [])
      .filter((c) => c.status === 'complete')
      .map((c) => ({ id: c.id, durationMs: c.durationMs ?? 0, bytes: c.persistedBytes ?? 0 }));
  } catch {
    checkpoints = [];
  }
  timeline.update(checkpoints);
  renderCheckpointTable();
}

const newestCheckpoint = () => checkpoints.reduce((max, c) => Math.max(max, c.id), 0);

/** Starts the example's code; `dropping` (the state the checkpoint holds for removed operators) allows dropping it. */
async function start(restore: StartOptions['restore'] = 'latest', options: { dropping?: string } = {}) {
  await endRun();
  clearError();
  outputList.replaceChildren();
  seenRestarts = 0;
  seenAttempts = 0;
  lastCheckpoint = undefined;
  dropped = options.dropping;
  shown = undefined;
  await loadHistory(example.id);
  const code = editor.getCode();
  const syntax = syntaxErrorPosition(code);
  try {
    run = startRun({
      code,
      jobName: example.id,
      storage,
      rate: Number(rate.value),
      restore,
      allowNonRestoredState: dropped !== undefined,
      workers: Number(workersCount.value),
      hooks: { onOutput: (record) => addOutput(formatValue(record)) },
    });
  } catch (error) {
    status = 'error';
    if (error instanceof UserCodeError) {
      const line = error.line ?? (error.message.startsWith('SyntaxError') ? syntax?.line : undefined);
      showError(error.message, line);
    } else showError(String(error));
    renderStatus();
    return;
  }
  const current = run;
  shown = current;
  status = 'running';
  renderWorkers(current);
  expected = current.verification ? expectedSums(current.verification.perRecord) : undefined;
  const job = example.id;
  subscription = current.running.checkpoints$.subscribe((stats) => {
    // A stopping run's final checkpoint still counts; not once another example is shown.
    if (stats.status !== 'completed' || stats.kind !== 'checkpoint' || example.id !== job) return;
    lastCheckpoint = stats;
    checkpoints = [...checkpoints.filter((c) => c.id !== stats.id), { id: stats.id, durationMs: stats.durationMs, bytes: stats.bytes }].slice(-60);
    timeline.update(checkpoints);
    renderCheckpointTable();
  });
  current.running.done.then(
    (result) => {
      if (run === current) status = result.status;
      renderStatus();
    },
    (error: unknown) => {
      if (run !== current) return;
      status = 'failed';
      if (error instanceof NonRestoredStateError) showNonRestoredState(error, restore);
      else showError(`the job failed: ${(error as Error).message}`);
      renderStatus();
    },
  );
  renderStatus();
}

/**
 * Which worker owns which key groups: keyed operator instance i owns Flink's key-group range for i of its
 * parallelism, and runs in worker i mod workers (weir's placement); everything else of the job runs as the
 * engine places it (sources' splits likewise, sinks and unkeyed state in worker 0).
 */
function renderWorkers(current: PlaygroundRun) {
  const box = $('workers');
  const { job, workers } = current;
  if (workers === 0) {
    box.replaceChildren(el('p', 'on the page\'s thread: every key group is here (pick Workers 1, 2 or 4 to spread the job over module Web Workers)'));
    return;
  }
  const max = job.executionOptions(undefined).maxParallelism;
  const table = el('table', undefined, 'small');
  table.append(el('tr'));
  table.rows[0]!.append(el('th', 'worker'), el('th', 'operator'), el('th', 'instance'), el('th', 'key groups'));
  for (const node of job.graph.nodes) {
    if (!node.keySelector || !node.stateful) continue;
    const parallelism = node.parallelism ?? 1;
    for (let instance = 0; instance < parallelism; instance++) {
      const { start: first, end: last } = keyGroupRangeFor(instance, parallelism, max);
      const tr = el('tr');
      tr.dataset.worker = String(instance % workers);
      tr.append(el('td', String(instance % workers)), el('td', node.uid), el('td', `${instance + 1}/${parallelism}`), el('td', `${first}–${last} of ${max}`));
      table.append(tr);
    }
  }
  const note = el('p', `${workers} module Web Worker${workers > 1 ? 's' : ''}; the source and the sinks run in worker 0.`);
  box.replaceChildren(note, table);
}

function renderCheckpointTable() {
  const rows = [...checkpoints].sort((a, b) => b.id - a.id).slice(0, 5);
  const table = el('table', undefined, 'small');
  table.append(el('tr'));
  table.rows[0]!.append(el('th', 'id'), el('th', 'duration'), el('th', 'size'));
  for (const c of rows) {
    const tr = el('tr');
    tr.append(el('td', String(c.id)), el('td', `${c.durationMs} ms`), el('td', formatBytes(c.bytes)));
    table.append(tr);
  }
  $('timeline-table').replaceChildren(table);
}

/** Where the current attempt of a run restored from, as the job reports it (`running.restoredFrom`). */
function restoredText(current: PlaygroundRun): string {
  if (current.control.opened.length <= current.running.restarts) {
    if (status !== 'running') return '-';
    return current.running.restarts > 0 ? 'restarting…' : 'starting…';
  }
  const restored = current.running.restoredFrom;
  if (!restored) return 'fresh start';
  const where = restored.kind === 'savepoint' ? `savepoint ${restored.path}` : `checkpoint #${restored.id} (IndexedDB)`;
  return dropped && current.running.restarts === 0 ? `${where}, state of removed operators dropped` : where;
}

/** Reports each attempt once its reader opened (so it has restored): an output line and a marker on the chart. */
function reportAttempts(current: PlaygroundRun) {
  const attempts = current.control.opened.length;
  if (attempts <= seenAttempts || attempts <= current.running.restarts) return;
  seenAttempts = attempts;
  const restored = current.running.restoredFrom;
  const what = restored ? `${restored.kind} #${restored.id}` : 'nothing';
  if (restored) timeline.mark({ kind: 'restore', at: restored.id, label: `⟲ restored #${restored.id}` });
  else if (attempts > 1) timeline.mark({ kind: 'restore', at: 0, label: '⟲ restarted from nothing' });
  if (attempts === 1) {
    if (restored?.kind === 'savepoint') addOutput(`⏮ restored from savepoint ${restored.path}`, 'restart');
    else if (restored) addOutput(`⏮ resumed from checkpoint #${restored.id}`, 'restart');
    if (dropped) addOutput(`⚠ ${dropped}: restored without that state (allowNonRestoredState)`, 'restart');
  } else {
    addOutput(`⟲ restart ${attempts - 1}: restored ${what}; output after it is replayed (forEach is at-least-once), state is exactly-once`, 'restart');
  }
}

function renderStatus() {
  const dl = $('status');
  const current = shown;
  const items: [string, string, string][] = [
    ['job', example.id, 'job'],
    ['status', status, 'status'],
    ['input', current ? (current.control.paused ? 'paused' : `${current.control.rate}/s`) : '-', 'input'],
    ['records read', String(current?.control.offset ?? 0), 'offset'],
    ['restarts', String(current?.running.restarts ?? 0), 'restarts'],
    ['crashes injected', String(current?.crashes ?? 0), 'crashes'],
    ['restored from', current ? restoredText(current) : '-', 'restored'],
    ['last checkpoint', lastCheckpoint ? `#${lastCheckpoint.id}, ${lastCheckpoint.durationMs} ms, ${formatBytes(lastCheckpoint.bytes)}` : '-', 'last-checkpoint'],
    ['savepoint', localStorage.getItem(saved('savepoint', example.id)) ?? '-', 'savepoint'],
  ];
  dl.replaceChildren(
    ...items.flatMap(([term, value, id]) => {
      const dd = el('dd', value);
      dd.dataset.field = id;
      return [el('dt', term), dd];
    }),
  );
}


/** Sums the verification state over all keys; retried until the source did not move meanwhile. */
async function verify() {
  const box = $('verify');
  const current = run;
  if (status === 'failed') {
    // A job that did not start (or stopped on an error in its code) has no state to check.
    box.className = 'verify';
    box.textContent = '';
    return;
  }
  if (!current?.verification || !expected) {
    box.className = 'verify';
    box.textContent = current ? 'This job declares no ctx.verify check.' : '';
    return;
  }
  const { state } = current.verification;
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      const before = current.control.offset;
      let sum = 0;
      let cursor: string | undefined;
      do {
        const page = await current.running.queryKeys(state, { limit: 1000, cursor });
        const values = await Promise.all(page.keys.map((key) => current.running.query<number>(state, key)));
        sum += values.reduce<number>((s, v) => s + (typeof v === 'number' ? v : 0), 0);
        cursor = page.cursor;
      } while (cursor);
      if (current.control.offset !== before) continue;
      box.dataset.offset = String(before);
      box.dataset.actual = String(sum);
      const want = expected(before);
      // A restore that dropped the state of removed operators: a renamed operator counts from the restored offset.
      const from = current.control.opened[0] ?? 0;
      if (dropped !== undefined && sum !== want && sum === want - expected(from)) {
        box.className = 'verify ok';
        box.dataset.expected = String(want - expected(from));
        box.textContent = `✔ exactly once since the restore that dropped state (record ${from}): Σ '${state}' = ${sum}; expected from records ${from} to ${before} = ${want - expected(from)}`;
        return;
      }
      box.className = `verify ${sum === want ? 'ok' : 'bad'}`;
      box.dataset.expected = String(want);
      box.textContent = `${sum === want ? '✔ exactly once' : '✘ mismatch'}: Σ '${state}' = ${sum}; expected from the ${before} records read = ${want}`;
      return;
    }
    box.className = 'verify';
    box.textContent = 'records are flowing: lower the rate to 0 for a still picture';
  } catch (error) {
    box.className = 'verify';
    box.textContent = `state '${state}' is not queryable yet: it appears once its operator sees a record (${(error as Error).message})`;
  }
}

async function renderState() {
  const current = run;
  const box = $('state');
  if (!current) {
    box.replaceChildren();
    return;
  }
  const parts: HTMLElement[] = [];
  for (const info of current.running.queryableStates()) {
    try {
      const page = await current.running.queryKeys(info.name, { limit: 12 });
      const values = await Promise.all(page.keys.map((key) => current.running.query(info.name, key)));
      const table = el('table', undefined, 'small');
      const caption = el('caption', `${info.uid} / ${info.state} (queryable '${info.name}', ${info.kind})${page.cursor ? ', first 12 keys' : ''}`);
      table.append(caption);
      page.keys.forEach((key, i) => {
        const tr = el('tr');
        tr.append(el('td', String(key), 'key'), el('td', formatValue(values[i])));
        table.append(tr);
      });
      parts.push(table);
    } catch {
      // The job is restarting: the next tick shows the restored state.
    }
  }
  if (parts.length > 0 || current.running.queryableStates().length === 0) box.replaceChildren(...parts);
}

setInterval(() => {
  const current = run;
  if (current) {
    if (current.userErrors.length > 0 && status === 'running') {
      // A user function threw (not the Crash button): stop retrying a bug and show it with its line.
      const error = current.userErrors[0];
      status = 'failed';
      void endRun();
      showError(`${(error as Error).name}: ${(error as Error).message} (in a function of your job)`, lineOf(error));
    } else {
      if (current.running.restarts > seenRestarts) {
        seenRestarts = current.running.restarts;
        // The failure came after the newest completed checkpoint: drawn between it and the next.
        const after = newestCheckpoint();
        timeline.mark({ kind: 'crash', at: after + 0.5, label: `💥 ${current.crashes >= seenRestarts ? 'crash' : 'failure'} after #${after}` });
      }
      reportAttempts(current);
    }
  }
  renderStatus();
  void renderState();
  void verify();
}, 400);

// The live job view, fed by the job running in this page (the served page polls GET /v1/job for the same view).
const liveView = createLiveView($('live'));
let drawing = false;
setInterval(() => {
  const current = run;
  if (!current || drawing) return;
  drawing = true;
  liveView
    .update(current.running.view())
    .catch((error: unknown) => console.error('live job view:', error))
    .finally(() => (drawing = false));
}, 1_000);

select.addEventListener('change', () => {
  example = EXAMPLES.find((e) => e.id === select.value)!;
  localStorage.setItem('weir-playground:example', example.id);
  editor.setCode(localStorage.getItem(saved('code', example.id)) ?? example.code);
  $('example-doc').textContent = example.doc;
  // Another job: its own checkpoint ids and markers, on a chart built anew.
  timeline.reset();
  void start();
});
rate.addEventListener('input', () => {
  $('rate-value').textContent = `${rate.value}/s`;
  localStorage.setItem('weir-playground:rate', rate.value);
  run?.setRate(Number(rate.value));
});
workersCount.addEventListener('change', () => {
  localStorage.setItem('weir-playground:workers', workersCount.value);
  if (run) void start();
});
$('run').addEventListener('click', () => void start());
$('stop').addEventListener('click', () => {
  if (!run) return;
  status = 'stopping';
  renderStatus();
  void endRun('stop').then(() => {
    status = 'stopped';
    renderStatus();
  });
});
$('crash').addEventListener('click', () => {
  if (!run) return showError('start the job first');
  run.crash();
  addOutput('💥 crash requested: the next record throws inside the job', 'restart');
});
$('savepoint').addEventListener('click', async () => {
  if (!run) return showError('start the job first');
  try {
    const stats = await run.running.savepoint({ path: 'savepoints' });
    localStorage.setItem(saved('savepoint', example.id), stats.path);
    timeline.mark({ kind: 'savepoint', at: stats.id, label: `💾 savepoint #${stats.id}` });
    renderStatus();
    addOutput(`💾 savepoint #${stats.id} written to ${stats.path} (${formatBytes(stats.bytes)})`, 'restart');
  } catch (error) {
    showError(`savepoint failed: ${(error as Error).message}`);
  }
});
$('restore').addEventListener('click', () => {
  const path = localStorage.getItem(saved('savepoint', example.id));
  if (!path) return showError('take a savepoint first');
  void start({ savepoint: path });
});
$('reset').addEventListener('click', async () => {
  await endRun();
  await storage.remove(example.id);
  for (const name of await storage.list('savepoints')) if (name.startsWith(`savepoint-${example.id}-`)) await storage.remove(`savepoints/${name}`);
  localStorage.removeItem(saved('savepoint', example.id));
  // Only the state goes: the code in the editor (and its copy in localStorage) stays as edited.
  timeline.reset();
  await start();
});
$('open-inspector').setAttribute('href', `inspector.html?source=indexeddb&db=${PLAYGROUND_DB}&job=${example.id}`);
select.addEventListener('change', () => $('open-inspector').setAttribute('href', `inspector.html?source=indexeddb&db=${PLAYGROUND_DB}&job=${example.id}`));

$('example-doc').textContent = example.doc;
$('rate-value').textContent = `${rate.value}/s`;
window.addEventListener('error', (event) => showError(`unexpected error: ${event.message}`));
window.addEventListener('unhandledrejection', (event) => showError(`unexpected error: ${(event.reason as Error)?.message ?? String(event.reason)}`));
// Reloading the page resumes the job from its latest checkpoint in IndexedDB.
void start('latest');

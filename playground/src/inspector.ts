import { indexedDbCheckpointStorage, type CheckpointStorage } from 'weir/browser';
import { checkpointHistory, inspectStorage, listJobs, type CheckpointSummary, type JobSummary, type StateSummary } from '../../src/inspector/readCheckpoint';
import { diffCheckpointEntries, pageStateEntries, readCheckpointEntries, type CheckpointEntries, type StateEntry } from '../../src/inspector/readStateEntries';
import { httpCheckpointStorage } from './httpStorage';
import { createTimeline } from './timeline';
import { el, formatBytes, formatTime, formatValue } from './values';
import './style.css';

/**
 * The visual checkpoint inspector. `?source=http` reads the storage `weir inspect --serve` exposes;
 * `?source=indexeddb&db=<name>` (the default, on the playground's database) reads IndexedDB in this browser.
 * A job's savepoints are listed with its checkpoints and browsed and diffed alike; a select's value is the
 * directory's path, which tells a savepoint from the checkpoint with its id. Every failure is shown where it
 * happened, never as a blank page.
 */
const params = new URLSearchParams(location.search);
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const PAGE = 20;

const jobSelect = $<HTMLSelectElement>('job');
const checkpointSelect = $<HTMLSelectElement>('checkpoint');
const stateSelect = $<HTMLSelectElement>('browse-state');
const timeline = createTimeline($('timeline'));

let storage: CheckpointStorage;
let onlyJobs: string[] | null = null;
let summaries: CheckpointSummary[] = [];
/** The job's recent failed and aborted checkpoints (they left no directory: from its failure history). */
let failures: Pick<JobSummary, 'failures' | 'failuresError'> = { failures: [] };
let offset = 0;
const entriesCache = new Map<string, Promise<CheckpointEntries>>();

function fatal(message: string) {
  const box = $('fatal');
  box.hidden = false;
  box.textContent = message;
}

function entriesOf(path: string): Promise<CheckpointEntries> {
  let entries = entriesCache.get(path);
  if (!entries) {
    entries = readCheckpointEntries(storage, path);
    entriesCache.set(path, entries);
  }
  return entries;
}

/** `#3` for a checkpoint, `savepoint #4` for a savepoint. */
function label(c: CheckpointSummary): string {
  return c.kind === 'savepoint' ? `savepoint #${c.id}` : `#${c.id}`;
}

async function init() {
  if (params.get('source') === 'http') {
    storage = httpCheckpointStorage(location.origin);
    const info = (await (await fetch('/api/info')).json()) as { location: string; jobs: string[] | null };
    onlyJobs = info.jobs;
    $('source').textContent = `directory ${info.location}`;
  } else {
    const db = params.get('db') ?? 'weir-playground';
    storage = indexedDbCheckpointStorage({ dbName: db });
    $('source').textContent = `IndexedDB ${db}`;
  }
  await loadJobs();
}

async function loadJobs() {
  const jobs = onlyJobs ?? (await listJobs(storage));
  jobSelect.replaceChildren(...jobs.map((job) => new Option(job, job)));
  const wanted = params.get('job');
  if (wanted && jobs.includes(wanted)) jobSelect.value = wanted;
  if (jobs.length === 0) {
    fatal(
      `no checkpoints or savepoints found in ${storage.location}: a job directory holds chk-<id> directories, a savepoint is a savepoint-<job>-<id>-<random> directory (run a job in the playground first)`,
    );
    return;
  }
  await loadJob();
}

async function loadJob() {
  entriesCache.clear();
  const job = jobSelect.value;
  const [summary] = await inspectStorage(storage, { jobs: [job] });
  const checkpoints = summary?.checkpoints ?? [];
  summaries = summary ? checkpointHistory(summary) : [];
  failures = { failures: summary?.failures ?? [], failuresError: summary?.failuresError };
  timeline.update(checkpoints.filter((c) => c.durationMs !== undefined).map((c) => ({ id: c.id, durationMs: c.durationMs!, bytes: c.persistedBytes ?? 0 })));
  renderCheckpointList();
  checkpointSelect.replaceChildren(...summaries.map((c) => new Option(`${label(c)} ${c.status}`, c.path)));
  $<HTMLSelectElement>('diff-from').replaceChildren(...summaries.map((c) => new Option(label(c), c.path)));
  $<HTMLSelectElement>('diff-to').replaceChildren(...summaries.map((c) => new Option(label(c), c.path)));
  const complete = checkpoints.filter((c) => c.status === 'complete');
  const newest = complete[complete.length - 1] ?? summaries[summaries.length - 1];
  if (newest) checkpointSelect.value = newest.path;
  if (complete.length >= 2) {
    $<HTMLSelectElement>('diff-from').value = complete[complete.length - 2]!.path;
    $<HTMLSelectElement>('diff-to').value = complete[complete.length - 1]!.path;
  }
  await showCheckpoint();
}

function renderCheckpointList() {
  const table = el('table', undefined, 'small');
  const head = el('tr');
  for (const title of ['id', 'kind', 'status', 'time', 'duration', 'persisted', 'full size', 'error']) head.append(el('th', title));
  table.append(head);
  for (const c of [...summaries].reverse()) {
    const tr = el('tr', undefined, `${c.status} ${c.kind}`);
    tr.dataset.path = c.path;
    tr.dataset.kind = c.kind;
    tr.title = c.path;
    tr.append(
      el('td', String(c.id)),
      el('td', c.kind),
      el('td', c.status),
      el('td', c.timestamp === undefined ? '-' : formatTime(c.timestamp)),
      el('td', c.durationMs === undefined ? '-' : `${c.durationMs} ms`),
      el('td', c.persistedBytes === undefined ? '-' : formatBytes(c.persistedBytes)),
      el('td', formatBytes(c.fullBytes)),
      el('td', c.error ?? '', 'error-text'),
    );
    tr.addEventListener('click', () => {
      checkpointSelect.value = c.path;
      void showCheckpoint().catch((error: unknown) => fatal(String(error)));
    });
    table.append(tr);
  }
  // Failed and aborted checkpoints have nothing to browse: a row each, by id among the others, with the reason.
  for (const f of failures.failures) {
    const tr = el('tr', undefined, `${f.status} ${f.kind}`);
    tr.title = `${f.error}: ${f.reason}`;
    tr.append(
      el('td', String(f.id)),
      el('td', f.kind),
      el('td', f.status),
      el('td', formatTime(f.timestamp)),
      el('td', `${f.durationMs} ms`),
      el('td', '-'),
      el('td', '-'),
      el('td', `${f.error}: ${f.reason}`, 'error-text'),
    );
    const before = Array.from(table.querySelectorAll('tr')).slice(1).find((row) => Number(row.firstElementChild?.textContent) < f.id);
    table.insertBefore(tr, before ?? null);
  }
  if (failures.failuresError) table.append(el('caption', `failure history ignored: ${failures.failuresError}`, 'error-text'));
  $('checkpoints').replaceChildren(table);
}

function current(): CheckpointSummary | undefined {
  return summaries.find((c) => c.path === checkpointSelect.value);
}

async function showCheckpoint() {
  const c = current();
  const errorBox = $('checkpoint-error');
  errorBox.hidden = !c?.error;
  errorBox.textContent = c?.error ? `${c.kind} #${c.id} is ${c.status}: ${c.error}` : '';
  $('checkpoint-title').textContent = c ? `${c.kind} #${c.id} of ${c.job} (${c.status}) · ${c.path}` : '';
  const box = $('operators');
  box.replaceChildren();
  stateSelect.replaceChildren();
  if (!c) return;
  for (const operator of c.operators) {
    const section = el('div', undefined, 'operator');
    section.append(el('h3', `${operator.uid} (${operator.role}) · ${operator.files.length} file${operator.files.length === 1 ? '' : 's'}, ${formatBytes(operator.bytes)}`));
    for (const file of operator.files) if (file.error) section.append(el('p', `${file.file}: ${file.error}`, 'error-text'));
    if (operator.states.length > 0) {
      const table = el('table', undefined, 'small');
      const head = el('tr');
      for (const title of ['state', 'kind', 'serializer', 'keys', 'entries', 'windows', 'bytes', 'key groups (skew)']) head.append(el('th', title));
      table.append(head);
      for (const state of operator.states) {
        const tr = el('tr');
        tr.dataset.state = `${operator.uid}/${state.name}`;
        const histogram = el('td');
        histogram.append(keyGroupHistogram(state, c.maxParallelism ?? 128));
        tr.append(
          el('td', state.name),
          el('td', state.ttl ? `${state.kind} +ttl` : state.kind),
          el('td', `${state.serializer} v${state.serializerVersion}`),
          el('td', String(state.keys), 'keys'),
          el('td', String(state.entries)),
          el('td', String(state.namespaces)),
          el('td', formatBytes(state.bytes)),
          histogram,
        );
        table.append(tr);
        stateSelect.append(new Option(`${operator.uid} / ${state.name}`, `${operator.uid}\u0000${state.name}`));
      }
      section.append(table);
    }
    box.append(section);
  }
  offset = 0;
  await browse();
}

/** Bars of keys per key group over all key groups: an uneven key distribution shows as a few tall bars. */
function keyGroupHistogram(state: StateSummary, maxParallelism: number): HTMLElement {
  const counts = new Array<number>(maxParallelism).fill(0);
  for (const [group, keys] of state.keyGroups) counts[group] = keys;
  const max = Math.max(1, ...counts);
  const mean = state.keys / maxParallelism;
  const wrap = el('div', undefined, 'histogram-wrap');
  const bars = el('div', undefined, 'histogram');
  bars.title = `keys per key group (0…${maxParallelism - 1}); busiest group ${max} keys, mean ${mean.toFixed(2)}`;
  for (const n of counts) {
    const bar = el('span');
    bar.style.height = `${(n / max) * 100}%`;
    bars.append(bar);
  }
  wrap.append(bars, el('small', `${state.keyGroups.length}/${maxParallelism} groups used · max ${max} · skew ×${(max / Math.max(mean, 1e-9)).toFixed(1)}`));
  return wrap;
}

async function browse() {
  const table = $<HTMLTableElement>('keys');
  const c = current();
  const [uid, name] = stateSelect.value.split('\u0000');
  if (!c || !uid || !name) {
    table.replaceChildren();
    $('page-info').textContent = c ? 'no keyed state' : '';
    return;
  }
  let entries: StateEntry[];
  try {
    entries = (await entriesOf(c.path)).get(uid)?.get(name) ?? [];
  } catch (error) {
    table.replaceChildren(el('caption', `cannot read ${c.kind} #${c.id}: ${(error as Error).message}`, 'error-text'));
    $('page-info').textContent = '';
    return;
  }
  const page = pageStateEntries(entries, { prefix: $<HTMLInputElement>('prefix').value, search: $<HTMLInputElement>('search').value, offset, limit: PAGE });
  // A TTL state's values are shown as the job sees them; when each was last accessed is a column of its own.
  const ttl = page.entries.some((entry) => entry.lastAccess !== undefined);
  const head = el('tr');
  for (const title of ['key', 'window', 'key group', 'value', ...(ttl ? ['last access (ttl)'] : [])]) head.append(el('th', title));
  const rows = page.entries.map((entry) => {
    const tr = el('tr');
    tr.append(el('td', String(entry.key), 'key'), el('td', entry.namespace ?? ''), el('td', String(entry.keyGroup)), el('td', formatValue(entry.value), entry.decoded ? 'value' : 'value raw'));
    if (ttl) tr.append(el('td', formatLastAccess(entry.lastAccess), 'last-access'));
    return tr;
  });
  table.replaceChildren(head, ...rows);
  table.dataset.total = String(page.total);
  $('page-info').textContent = page.total === 0 ? ' no matching keys ' : ` ${page.offset + 1}–${page.offset + page.entries.length} of ${page.total} `;
}

/** One time, or one per element of a list or map, in the value's order. */
function formatLastAccess(lastAccess: number | number[] | undefined): string {
  if (lastAccess === undefined) return '';
  return Array.isArray(lastAccess) ? lastAccess.map(formatTime).join(', ') : formatTime(lastAccess);
}

async function diff() {
  const byPath = (path: string) => summaries.find((c) => c.path === path);
  const from = byPath($<HTMLSelectElement>('diff-from').value);
  const to = byPath($<HTMLSelectElement>('diff-to').value);
  if (!from || !to) return;
  const box = $('diff');
  box.replaceChildren(el('p', `comparing ${label(from)} with ${label(to)}…`));
  let before: CheckpointEntries;
  let after: CheckpointEntries;
  try {
    [before, after] = await Promise.all([entriesOf(from.path), entriesOf(to.path)]);
  } catch (error) {
    box.replaceChildren(el('p', `cannot diff: ${(error as Error).message}`, 'error-text'));
    return;
  }
  const parts: HTMLElement[] = [];
  for (const d of diffCheckpointEntries(before, after)) {
    const section = el('div', undefined, 'diff-state');
    section.dataset.state = `${d.uid}/${d.state}`;
    section.dataset.added = String(d.added.length);
    section.dataset.removed = String(d.removed.length);
    section.dataset.changed = String(d.changed.length);
    section.append(el('h3', `${d.uid} / ${d.state}: +${d.added.length} added, −${d.removed.length} removed, ~${d.changed.length} changed, ${d.unchanged} unchanged`));
    const table = el('table', undefined, 'small');
    const row = (kind: string, entry: StateEntry, beforeValue: string, afterValue: string) => {
      const tr = el('tr', undefined, kind);
      tr.append(el('td', kind), el('td', String(entry.key), 'key'), el('td', entry.namespace ?? ''), el('td', beforeValue), el('td', afterValue));
      table.append(tr);
    };
    const head = el('tr');
    for (const title of ['', 'key', 'window', 'before', 'after']) head.append(el('th', title));
    table.append(head);
    for (const entry of d.added.slice(0, 50)) row('added', entry, '', formatValue(entry.value));
    for (const entry of d.removed.slice(0, 50)) row('removed', entry, formatValue(entry.value), '');
    for (const { before: b, after: a } of d.changed.slice(0, 50)) row('changed', a, formatValue(b.value), formatValue(a.value));
    section.append(table);
    parts.push(section);
  }
  box.replaceChildren(...(parts.length > 0 ? parts : [el('p', `no keyed state in ${label(from)} or ${label(to)}`)]));
  box.dataset.from = from.path;
  box.dataset.to = to.path;
}

const guard = (action: () => Promise<void>) => () => void action().catch((error: unknown) => fatal(`${(error as Error).message ?? String(error)}`));
jobSelect.addEventListener('change', guard(loadJob));
checkpointSelect.addEventListener('change', guard(showCheckpoint));
stateSelect.addEventListener('change', guard(async () => { offset = 0; await browse(); }));
$('prefix').addEventListener('input', guard(async () => { offset = 0; await browse(); }));
$('search').addEventListener('input', guard(async () => { offset = 0; await browse(); }));
$('prev').addEventListener('click', guard(async () => { offset = Math.max(0, offset - PAGE); await browse(); }));
$('next').addEventListener('click', guard(async () => {
  const total = Number($('keys').dataset.total ?? 0);
  if (offset + PAGE < total) offset += PAGE;
  await browse();
}));
$('diff-run').addEventListener('click', guard(diff));
$('refresh').addEventListener('click', guard(loadJobs));
window.addEventListener('error', (event) => fatal(`unexpected error: ${event.message}`));
window.addEventListener('unhandledrejection', (event) => fatal(`unexpected error: ${(event.reason as Error)?.message ?? String(event.reason)}`));
init().catch((error: unknown) => fatal(`the inspector could not read ${storage?.location ?? 'its storage'}: ${(error as Error).message}`));

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** What `npm run bench -- curves` measured (bench/curves.json): one entry per size, `null` where a run failed. */
export interface CurvesData {
  readonly machine: string;
  /** Keyed reduce throughput (events/s) by distinct keys. */
  readonly throughput: readonly { keys: number; events: number; heap: number | null; lmdb: number | null }[];
  /** Checkpoints (heap backend, fs storage) and restores by keys in the state. */
  readonly checkpoints: readonly { keys: number; fullMs: number | null; fullBytes: number | null; deltaMs: number | null; deltaBytes: number | null; restoreMs: number | null }[];
  /** Why points are missing, e.g. `heap: out of memory at 10⁷ keys (2048 MB heap)`. */
  readonly notes: readonly string[];
}

interface Chart {
  readonly id: string;
  readonly title: string;
  readonly y: string;
  readonly xs: readonly number[];
  readonly series: readonly { label: string; color: string; values: readonly (number | null)[] }[];
}

/** uPlot's script and stylesheet from node_modules, inlined so that the page opens from disk. */
export function uplotAssets(): { script: string; css: string } {
  const require = createRequire(import.meta.url);
  const dist = (file: string) => readFileSync(require.resolve(`uplot/dist/${file}`), 'utf8');
  return { script: dist('uPlot.iife.min.js'), css: dist('uPlot.min.css') };
}

function chartsOf(data: CurvesData): Chart[] {
  const t = data.throughput;
  const c = data.checkpoints;
  const keys = (rows: readonly { keys: number }[]) => rows.map((row) => row.keys);
  return [
    {
      id: 'throughput',
      title: 'Keyed reduce throughput vs distinct keys',
      y: 'events/s',
      xs: keys(t),
      series: [
        { label: 'heap backend', color: '#1f77b4', values: t.map((row) => row.heap) },
        { label: 'LMDB backend', color: '#d62728', values: t.map((row) => row.lmdb) },
      ],
    },
    {
      id: 'checkpoint-time',
      title: 'Checkpoint time vs state size (heap backend, fs storage)',
      y: 'ms',
      xs: keys(c),
      series: [
        { label: 'full', color: '#1f77b4', values: c.map((row) => row.fullMs) },
        { label: 'incremental (1% of keys changed)', color: '#2ca02c', values: c.map((row) => row.deltaMs) },
      ],
    },
    {
      id: 'checkpoint-bytes',
      title: 'Checkpoint size vs state size',
      y: 'bytes',
      xs: keys(c),
      series: [
        { label: 'full', color: '#1f77b4', values: c.map((row) => row.fullBytes) },
        { label: 'incremental (1% of keys changed)', color: '#2ca02c', values: c.map((row) => row.deltaBytes) },
      ],
    },
    {
      id: 'restore-time',
      title: 'Restore time vs state size (a job restoring a full checkpoint)',
      y: 'ms',
      xs: keys(c),
      series: [{ label: 'restore', color: '#9467bd', values: c.map((row) => row.restoreMs) }],
    },
  ];
}

const escapeHtml = (text: string) => text.replace(/[&<>"]/g, (ch) => `&#${ch.charCodeAt(0)};`);
/** JSON inside a <script>: `<` escaped so that no string in it ends the script. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

/**
 * The page of growth curves: one uPlot chart per measure, distinct keys on a log axis, values on a log axis, a
 * missing point (a run that failed) left as a gap and explained under the charts. Sets `window.curvesDrawn` once
 * every chart is drawn, for the screenshot.
 */
export function curvesPage(data: CurvesData, assets: { script: string; css: string }): string {
  const charts = chartsOf(data);
  const notes = data.notes.map((note) => `<li>${escapeHtml(note)}</li>`).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>weir growth curves</title>
<style>${assets.css}</style>
<style>
  body { font: 14px system-ui, sans-serif; margin: 16px; background: #fff; color: #222; width: 1168px; }
  h1 { font-size: 18px; margin: 0 0 4px; }
  .grid { display: grid; grid-template-columns: 580px 580px; gap: 8px; }
  .chart h2 { font-size: 14px; margin: 8px 0 0; }
  .machine, .notes { color: #555; font-size: 12px; }
</style>
</head>
<body>
<h1>weir: how throughput, checkpoints and restores grow with the state</h1>
<div class="machine">${escapeHtml(data.machine)}</div>
<div class="grid">${charts.map((chart) => `<div class="chart" id="${chart.id}"><h2>${escapeHtml(chart.title)}</h2></div>`).join('')}</div>
${notes === '' ? '' : `<ul class="notes">${notes}</ul>`}
<script>${assets.script}</script>
<script>
const charts = ${scriptJson(charts)};
const si = (v) => v == null ? '' : Math.abs(v) >= 1e9 ? (v / 1e9).toPrecision(3) + 'G' : Math.abs(v) >= 1e6 ? (v / 1e6).toPrecision(3) + 'M' : Math.abs(v) >= 1e3 ? (v / 1e3).toPrecision(3) + 'k' : String(+v.toPrecision(3));
for (const chart of charts) {
  new uPlot({
    width: 580,
    height: 300,
    // A static picture: the legend names the series, without the values under a cursor.
    legend: { live: false },
    scales: { x: { time: false, distr: 3 }, y: { distr: 3 } },
    axes: [
      { label: 'distinct keys', values: (u, ticks) => ticks.map(si) },
      { label: chart.y, size: 60, values: (u, ticks) => ticks.map(si) },
    ],
    series: [{ label: 'keys', value: (u, v) => si(v) }, ...chart.series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { size: 7 }, spanGaps: false, value: (u, v) => si(v) }))],
  }, [chart.xs, ...chart.series.map((s) => s.values)], document.getElementById(chart.id));
}
window.curvesDrawn = true;
</script>
</body>
</html>
`;
}

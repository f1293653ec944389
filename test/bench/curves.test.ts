import { describe, expect, it } from 'vitest';
import { curvesPage, uplotAssets, type CurvesData } from '../../bench/curvesPage';

const data: CurvesData = {
  machine: 'test machine <2 cores>',
  throughput: [
    { keys: 1_000, events: 1_000_000, heap: 2e6, lmdb: 5e5 },
    { keys: 10_000, events: 1_000_000, heap: null, lmdb: 4e5 },
  ],
  checkpoints: [
    { keys: 1_000, fullMs: 20, fullBytes: 30_000, deltaMs: 5, deltaBytes: 1_500, restoreMs: 40 },
    { keys: 10_000, fullMs: 30, fullBytes: 300_000, deltaMs: 6, deltaBytes: 3_000, restoreMs: 90 },
  ],
  notes: ['heap backend at 10⁴ keys: out of memory (2048 MB heap)'],
};

/** The chart definitions the page hands to uPlot. */
function chartsIn(html: string): { id: string; xs: number[]; series: { label: string; values: (number | null)[] }[] }[] {
  const json = /const charts = (.*);\n/.exec(html)?.[1];
  expect(json).toBeDefined();
  return JSON.parse(json!);
}

describe('the growth curves page (bench/curvesPage)', () => {
  const assets = uplotAssets();
  const html = curvesPage(data, assets);

  it('draws the four charts with uPlot, inlined so that the page opens from disk', () => {
    expect(assets.script).toContain('uPlot');
    expect(html).toContain(assets.script);
    expect(html).toContain(assets.css);
    expect(html).not.toMatch(/<script[^>]+src=/);
    for (const id of ['throughput', 'checkpoint-time', 'checkpoint-bytes', 'restore-time']) expect(html).toContain(`<div class="chart" id="${id}">`);
    expect(chartsIn(html).map((chart) => chart.id)).toEqual(['throughput', 'checkpoint-time', 'checkpoint-bytes', 'restore-time']);
  });

  it('plots every measured point and leaves a failed one as a gap, saying why', () => {
    const [throughput, time, bytes, restore] = chartsIn(html);
    expect(throughput!.xs).toEqual([1_000, 10_000]);
    expect(throughput!.series.map((s) => [s.label, s.values])).toEqual([
      ['heap backend', [2e6, null]],
      ['LMDB backend', [5e5, 4e5]],
    ]);
    expect(time!.series.map((s) => s.values)).toEqual([[20, 30], [5, 6]]);
    expect(bytes!.series.map((s) => s.values)).toEqual([[30_000, 300_000], [1_500, 3_000]]);
    expect(restore!.series[0]!.values).toEqual([40, 90]);
    expect(html).toContain('<li>heap backend at 10⁴ keys: out of memory (2048 MB heap)</li>');
    expect(html).toContain('test machine &#60;2 cores&#62;');
  });
});

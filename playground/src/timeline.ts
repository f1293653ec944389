import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface TimelinePoint {
  id: number;
  durationMs: number;
  bytes: number;
}

/** A chart of checkpoints: duration (ms, left axis) and persisted size (KiB, right axis) by checkpoint id. */
export function createTimeline(parent: HTMLElement): { update(points: TimelinePoint[]): void } {
  let chart: uPlot | undefined;
  const width = () => Math.max(280, parent.clientWidth - 8);
  const make = (data: uPlot.AlignedData) =>
    new uPlot(
      {
        width: width(),
        height: 180,
        legend: { show: true },
        scales: { x: { time: false }, ms: { auto: true }, kib: { auto: true } },
        axes: [
          { label: 'checkpoint id', labelSize: 20, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] },
          { scale: 'ms', label: 'ms', labelSize: 20 },
          { scale: 'kib', label: 'KiB', side: 1, grid: { show: false }, labelSize: 20 },
        ],
        series: [
          { label: 'id' },
          { label: 'duration (ms)', scale: 'ms', stroke: '#2563eb', width: 2, points: { show: true, size: 6 } },
          { label: 'size (KiB)', scale: 'kib', stroke: '#d97706', width: 2, points: { show: true, size: 6 } },
        ],
      },
      data,
      parent,
    );
  window.addEventListener('resize', () => chart?.setSize({ width: width(), height: 180 }));
  return {
    update(points) {
      const sorted = [...points].sort((a, b) => a.id - b.id);
      const data: uPlot.AlignedData = [sorted.map((p) => p.id), sorted.map((p) => p.durationMs), sorted.map((p) => Math.round((p.bytes / 1024) * 10) / 10)];
      parent.dataset.points = String(sorted.length);
      if (chart) chart.setData(data);
      else chart = make(data);
    },
  };
}

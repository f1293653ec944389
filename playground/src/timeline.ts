import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface TimelinePoint {
  id: number;
  durationMs: number;
  bytes: number;
}

/**
 * An event of the run drawn across the chart at a checkpoint id: a crash (after the checkpoint it follows), a
 * restore (at the checkpoint or savepoint restored), a savepoint (at its id).
 */
export interface TimelineMarker {
  kind: 'crash' | 'restore' | 'savepoint';
  at: number;
  label: string;
  /** The full text shown on hover, when the label is a short form of it. */
  title?: string;
}

export interface Timeline {
  update(points: TimelinePoint[]): void;
  /** Adds a marker line. */
  mark(marker: TimelineMarker): void;
  /** Replaces every marker line (a live view redraws them from the job's events). */
  setMarkers(markers: TimelineMarker[]): void;
  /** Drops points and markers and builds the chart anew: series, scales and axes know nothing of what came before. */
  reset(): void;
}

/**
 * A chart of checkpoints: duration (ms, left axis) and persisted size (KiB, right axis) by checkpoint id, with
 * markers. The parent's data attributes say what it shows (`data-points`, `data-markers`, `data-x-min`/`data-x-max`:
 * the x scale as drawn), and each marker is an element `.marker[data-kind][data-at]` over the plot.
 */
export function createTimeline(parent: HTMLElement): Timeline {
  let chart: uPlot | undefined;
  let data: uPlot.AlignedData = [[], [], []];
  let markers: TimelineMarker[] = [];
  const width = () => Math.max(280, parent.clientWidth - 8);
  // The x range covers the points and the markers only, so ids of an earlier example never linger on the axis.
  const xRange = (): uPlot.Range.MinMax => {
    const xs = [...(data[0] as number[]), ...markers.map((m) => m.at)];
    if (xs.length === 0) return [0, 1];
    const min = Math.min(...xs);
    const max = Math.max(...xs);
    return min === max ? [min - 1, max + 1] : [min, max];
  };
  const drawMarkers = (u: uPlot) => {
    const [min, max] = [u.scales.x?.min ?? 0, u.scales.x?.max ?? 1];
    parent.dataset.xMin = String(min);
    parent.dataset.xMax = String(max);
    u.over.querySelectorAll('.marker').forEach((node) => node.remove());
    for (const marker of markers) {
      const line = document.createElement('div');
      line.className = `marker marker-${marker.kind}`;
      line.dataset.kind = marker.kind;
      line.dataset.at = String(marker.at);
      line.title = marker.title ?? marker.label;
      line.style.left = `${u.valToPos(marker.at, 'x')}px`;
      const label = document.createElement('span');
      label.textContent = marker.label;
      line.append(label);
      u.over.append(line);
    }
  };
  const make = () =>
    new uPlot(
      {
        width: width(),
        height: 180,
        legend: { show: true },
        scales: { x: { time: false, range: xRange }, ms: { auto: true }, kib: { auto: true } },
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
        hooks: { draw: [drawMarkers] },
      },
      data,
      parent,
    );
  const render = () => {
    parent.dataset.points = String(data[0].length);
    parent.dataset.markers = String(markers.length);
    if (chart) chart.setData(data);
    else chart = make();
  };
  window.addEventListener('resize', () => chart?.setSize({ width: width(), height: 180 }));
  return {
    update(points) {
      const sorted = [...points].sort((a, b) => a.id - b.id);
      data = [sorted.map((p) => p.id), sorted.map((p) => p.durationMs), sorted.map((p) => Math.round((p.bytes / 1024) * 10) / 10)];
      render();
    },
    mark(marker) {
      markers = [...markers, marker].slice(-30);
      render();
    },
    setMarkers(next) {
      markers = next.slice(-30);
      render();
    },
    reset() {
      chart?.destroy();
      chart = undefined;
      data = [[], [], []];
      markers = [];
      render();
    },
  };
}

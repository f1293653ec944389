import ELK, { type ElkNode } from 'elkjs/lib/elk.bundled.js';
import type { JobView, JobViewOperator, MinAvgMax } from 'weir';
import { createTimeline, type TimelineMarker } from './timeline';
import { el, formatBytes, formatTime } from './values';

/** The live job view drawn into a parent element; `update` redraws it from a newer view of the job. */
export interface LiveView {
  update(view: JobView): Promise<void>;
}

const SVG = 'http://www.w3.org/2000/svg';
const NODE_WIDTH = 210;
const NODE_HEIGHT = 84;

/**
 * The live job view, shared by the page the Node server serves (`/job`, fed by `GET /v1/job`) and the playground
 * (fed by the in-browser job's `running.view()`): the job graph laid out by elkjs with each operator's rates,
 * backpressure and watermark; the checkpoint timeline with restart and savepoint markers; Flink's checkpoint
 * statistics (min/avg/max); the history with failed and aborted checkpoints and their reasons; and each operator's
 * alignment, sync and async times in the latest checkpoint. The graph is laid out again only when its shape changes.
 */
export function createLiveView(parent: HTMLElement): LiveView {
  const elk = new ELK();
  const panel = (title: string, note?: string) => {
    const section = el('section', undefined, 'panel');
    const heading = el('h2', title);
    if (note) heading.append(' ', el('small', note));
    section.append(heading);
    parent.append(section);
    return section;
  };
  const status = el('p', 'waiting for the job…', 'live-status');
  const graphPanel = panel('Job graph', 'records per second in and out, busy and backpressured share of sources, watermark');
  graphPanel.classList.add('live-graph');
  graphPanel.prepend(status);
  const svg = document.createElementNS(SVG, 'svg');
  svg.classList.add('job-graph');
  graphPanel.append(svg);
  const timelineBox = el('div', undefined, 'chart');
  timelineBox.id = 'live-timeline';
  panel('Checkpoint timeline', 'duration (ms) and persisted size (KiB) per completed checkpoint; restarts and savepoints marked').append(timelineBox);
  const timeline = createTimeline(timelineBox);
  const summary = el('table', undefined, 'small live-summary');
  panel('Checkpoint statistics', 'over the completed checkpoints of this run').append(summary);
  const history = el('table', undefined, 'small live-history');
  panel('Checkpoint history', 'newest first, failed and aborted ones with their reasons').append(history);
  const parts = el('table', undefined, 'small live-operators');
  panel('Operators in the latest checkpoint', 'the slowest instance of each (ms), bytes of all instances').append(parts);

  let shape = '';
  const nodes = new Map<string, SVGGElement>();

  const layout = async (view: JobView) => {
    const graph: ElkNode = {
      id: 'job',
      layoutOptions: { 'elk.algorithm': 'layered', 'elk.direction': 'RIGHT', 'elk.spacing.nodeNode': '24', 'elk.layered.spacing.nodeNodeBetweenLayers': '48' },
      children: view.operators.map((operator) => ({ id: operator.uid, width: NODE_WIDTH, height: NODE_HEIGHT })),
      edges: view.operators.flatMap((operator) => operator.inputs.map((input, i) => ({ id: `${input}->${operator.uid}#${i}`, sources: [input], targets: [operator.uid] }))),
    };
    const laid = await elk.layout(graph);
    svg.replaceChildren();
    nodes.clear();
    const defs = document.createElementNS(SVG, 'defs');
    defs.innerHTML = '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#64748b"/></marker>';
    svg.append(defs);
    svg.setAttribute('width', String((laid.width ?? 0) + 8));
    svg.setAttribute('height', String((laid.height ?? 0) + 8));
    for (const edge of laid.edges ?? []) {
      for (const section of edge.sections ?? []) {
        const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
        const path = document.createElementNS(SVG, 'path');
        path.setAttribute('d', points.map((point, i) => `${i === 0 ? 'M' : 'L'} ${point.x + 4} ${point.y + 4}`).join(' '));
        path.setAttribute('class', 'edge');
        path.setAttribute('marker-end', 'url(#arrow)');
        path.dataset.from = edge.sources[0];
        path.dataset.to = edge.targets[0];
        svg.append(path);
      }
    }
    for (const child of laid.children ?? []) {
      const group = document.createElementNS(SVG, 'g');
      group.setAttribute('class', 'operator');
      group.setAttribute('transform', `translate(${(child.x ?? 0) + 4}, ${(child.y ?? 0) + 4})`);
      group.dataset.uid = child.id;
      const box = document.createElementNS(SVG, 'rect');
      box.setAttribute('width', String(NODE_WIDTH));
      box.setAttribute('height', String(NODE_HEIGHT));
      box.setAttribute('rx', '6');
      group.append(box);
      for (let line = 0; line < 4; line++) {
        const text = document.createElementNS(SVG, 'text');
        text.setAttribute('x', '8');
        text.setAttribute('y', String(18 + line * 19));
        text.setAttribute('class', line === 0 ? 'title' : 'figure');
        group.append(text);
      }
      svg.append(group);
      nodes.set(child.id, group);
    }
  };

  const drawNode = (operator: JobViewOperator) => {
    const group = nodes.get(operator.uid);
    if (!group) return;
    const [title, rates, load, time] = Array.from(group.querySelectorAll('text'));
    const where = operator.workers ? ` · w${operator.workers.join(',')}` : '';
    title!.textContent = `${operator.uid} (${operator.kind}) ×${operator.parallelism}${where}`;
    rates!.textContent = `in ${rate(operator.recordsInPerSecond)} · out ${rate(operator.recordsOutPerSecond)}`;
    load!.textContent =
      operator.busyRatio === undefined
        ? `${count(operator.recordsIn)} in · ${count(operator.recordsOut)} out`
        : `busy ${percent(operator.busyRatio)} · backpressured ${percent(operator.backpressuredRatio ?? 0)}`;
    time!.textContent = operator.watermark === undefined ? 'no watermark' : `wm ${formatTime(operator.watermark)} · lag ${seconds(operator.watermarkLagMs ?? 0)}`;
    group.dataset.recordsInPerSecond = String(operator.recordsInPerSecond);
    group.dataset.recordsOutPerSecond = String(operator.recordsOutPerSecond);
    group.dataset.backpressured = String(operator.backpressuredRatio ?? '');
    group.dataset.watermark = String(operator.watermark ?? '');
    group.classList.toggle('backpressured', (operator.backpressuredRatio ?? 0) > 0.5);
  };

  const drawSummary = (view: JobView) => {
    summary.replaceChildren();
    const head = summary.insertRow();
    for (const name of ['', 'min', 'avg', 'max']) head.append(el('th', name));
    if (!view.summary) {
      summary.insertRow().append(el('td', 'no completed checkpoint yet'));
      return;
    }
    const row = (name: string, figures: MinAvgMax, format: (value: number) => string) => {
      const tr = summary.insertRow();
      tr.dataset.figure = name;
      tr.append(el('th', name), el('td', format(figures.min)), el('td', format(figures.avg)), el('td', format(figures.max)));
    };
    row('end to end duration', view.summary.durationMs, (ms) => `${Math.round(ms)} ms`);
    row('checkpointed data size', view.summary.bytes, (bytes) => formatBytes(Math.round(bytes)));
    row('full checkpoint data size', view.summary.fullSize, (bytes) => formatBytes(Math.round(bytes)));
    row('alignment duration', view.summary.alignmentMs, (ms) => `${Math.round(ms)} ms`);
  };

  const drawHistory = (view: JobView) => {
    history.replaceChildren();
    const head = history.insertRow();
    for (const name of ['id', 'kind', 'status', 'triggered', 'duration', 'size', 'reason']) head.append(el('th', name));
    for (const stats of [...view.checkpoints].reverse()) {
      const tr = history.insertRow();
      tr.dataset.id = String(stats.id);
      tr.dataset.status = stats.status;
      tr.dataset.kind = stats.kind;
      tr.className = `status-${stats.status}`;
      tr.append(
        el('td', String(stats.id)),
        el('td', stats.final ? `${stats.kind} (final)` : stats.kind),
        el('td', stats.status),
        el('td', formatTime(stats.timestamp)),
        el('td', `${stats.durationMs} ms`),
        el('td', stats.status === 'completed' ? formatBytes(stats.bytes) : '—'),
        el('td', stats.reason ? `${stats.error ? `${stats.error}: ` : ''}${stats.reason}` : '', 'reason'),
      );
    }
  };

  const drawParts = (view: JobView) => {
    parts.replaceChildren();
    const head = parts.insertRow();
    for (const name of ['operator', 'checkpoint', 'alignment', 'sync', 'async', 'size']) head.append(el('th', name));
    for (const operator of view.operators) {
      const part = operator.checkpoint;
      if (!part) continue;
      const tr = parts.insertRow();
      tr.dataset.uid = operator.uid;
      tr.append(el('td', operator.uid), el('td', String(part.id)), el('td', `${part.alignmentMs} ms`), el('td', `${part.syncMs} ms`), el('td', `${part.asyncMs} ms`), el('td', formatBytes(part.bytes)));
    }
  };

  const drawTimeline = (view: JobView) => {
    timeline.update(view.checkpoints.filter((stats) => stats.status === 'completed').map(({ id, durationMs, bytes }) => ({ id, durationMs, bytes })));
    const markers = view.events.map((event): TimelineMarker =>
      event.type === 'restart'
        ? { kind: 'crash', at: (event.afterCheckpoint ?? 0) + 0.5, label: `restart ${event.restarts}`, title: `restart ${event.restarts} at ${formatTime(event.at)}: ${event.reason}` }
        : { kind: 'savepoint', at: event.checkpoint, label: `savepoint ${event.checkpoint}`, title: `savepoint ${event.checkpoint} ${event.status} at ${formatTime(event.at)}${event.reason ? `: ${event.reason}` : ''}` },
    );
    timeline.setMarkers(markers);
  };

  return {
    async update(view) {
      const next = JSON.stringify(view.operators.map((operator) => [operator.uid, operator.inputs]));
      if (next !== shape) {
        shape = next;
        await layout(view);
      }
      for (const operator of view.operators) drawNode(operator);
      const { completed, failed, aborted } = view.counts;
      status.textContent =
        `job '${view.job}' at ${formatTime(view.at)} · ${view.workers === undefined ? 'one thread' : `${view.workers} workers`} · ` +
        `${view.restarts} restart${view.restarts === 1 ? '' : 's'} · checkpoints: ${completed} completed, ${failed} failed, ${aborted} aborted`;
      drawTimeline(view);
      drawSummary(view);
      drawHistory(view);
      drawParts(view);
    },
  };
}

function rate(perSecond: number): string {
  return `${count(perSecond)}/s`;
}

function count(value: number): string {
  if (value >= 1e6) return `${(value / 1e6).toFixed(1)}M`;
  if (value >= 1e3) return `${(value / 1e3).toFixed(1)}k`;
  return value < 10 && value % 1 !== 0 ? value.toFixed(1) : String(Math.round(value));
}

function percent(ratio: number): string {
  return `${Math.round(ratio * 100)}%`;
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

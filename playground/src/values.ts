/**
 * Renders state values faithfully: Dates as dates, Maps and Sets with their entries, BigInts with an `n`, undefined
 * as such (JSON.stringify would turn a Map into `{}` and drop undefined).
 */
export function formatValue(value: unknown, depth = 0): string {
  if (depth > 6) return '…';
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value !== 'object') return String(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : `Date(${value.toISOString()})`;
  if (value instanceof Map) return `Map(${value.size}) {${Array.from(value, ([k, v]) => `${formatValue(k, depth + 1)} => ${formatValue(v, depth + 1)}`).join(', ')}}`;
  if (value instanceof Set) return `Set(${value.size}) {${Array.from(value, (v) => formatValue(v, depth + 1)).join(', ')}}`;
  if (value instanceof RegExp) return String(value);
  if (Array.isArray(value)) return `[${value.map((v) => formatValue(v, depth + 1)).join(', ')}]`;
  return `{${Object.entries(value).map(([k, v]) => `${/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)}: ${formatValue(v, depth + 1)}`).join(', ')}}`;
}

/** `<tag>` with text, safely (never innerHTML with data). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, className?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** A time on a job's clock: wall-clock time as such; a virtual clock or event time starting near 0 as its milliseconds. */
export function formatTime(ms: number): string {
  return ms > 1e11 ? new Date(ms).toLocaleTimeString() : `t=${ms}`;
}

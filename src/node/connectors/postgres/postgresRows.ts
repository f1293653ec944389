import type pg from 'pg';
import type { Json } from '../../../core/values.js';
import { PostgresRowError } from './postgresErrors.js';
import type { PostgresTable } from './postgresTable.js';
import { nodePostgres } from './postgresConnection.js';

/** A row as the sink keeps it (in checkpoints too): one value per sink column, in the sink's column order. */
export type Row = Json[];

/** PostgreSQL's limit on the parameters of one statement. */
const MAX_PARAMETERS = 65_535;

/** How rows become statements: the table, its columns, and in upsert mode the key that identifies a row. */
export interface RowShape {
  readonly table: PostgresTable;
  readonly columns: readonly string[];
  /** Upsert key columns (a unique constraint of the table); undefined in append mode. */
  readonly key?: readonly string[];
}

/**
 * Turns a record's `{ column: value }` object into a `Row`, checking it first: a column the sink does not write is an
 * error naming it and the table (it would otherwise be dropped silently), and so is a missing key column in upsert
 * mode (it would fail the commit, and with it every restore that replays the same rows).
 */
export function rowMaker<T>(shape: RowShape, tableColumns: readonly string[], toRow: (value: T) => Record<string, Json>): (value: T) => Row {
  const index = new Map(shape.columns.map((column, i) => [column, i]));
  const keyIndexes = (shape.key ?? []).map((column) => index.get(column)!);
  const inTable = new Set(tableColumns);
  return (value) => {
    const record = toRow(value);
    if (record === null || typeof record !== 'object' || Array.isArray(record)) {
      throw new PostgresRowError(`postgres table '${shape.table.name}': a record's row must be an object of column values, got ${JSON.stringify(record)?.slice(0, 100)}; map records with toRow`);
    }
    const row: Row = new Array<Json>(shape.columns.length).fill(null);
    for (const column in record) {
      const at = index.get(column);
      if (at === undefined) {
        const why = inTable.has(column) ? `is not among the sink's columns (${shape.columns.join(', ')}); add it to columns` : 'does not exist in the table; rename it in toRow or add the column';
        throw new PostgresRowError(`postgres table '${shape.table.name}': column '${column}' ${why}`);
      }
      const cell = record[column];
      row[at] = cell === undefined ? null : cell;
    }
    for (const at of keyIndexes) {
      if (row[at] === null) throw new PostgresRowError(`postgres table '${shape.table.name}': key column '${shape.columns[at]}' is missing in row ${JSON.stringify(record).slice(0, 200)}`);
    }
    return row;
  };
}

/** Checks the sink's columns against the table's, at open, so a typo fails before any record is taken. */
export function checkColumns(shape: RowShape, tableColumns: readonly string[]): void {
  const inTable = new Set(tableColumns);
  for (const column of [...shape.columns, ...(shape.key ?? [])]) {
    if (!inTable.has(column)) {
      throw new PostgresRowError(`postgres table '${shape.table.name}': column '${column}' does not exist in the table (it has ${tableColumns.join(', ')})`);
    }
  }
}

/**
 * Runs the INSERTs that write `rows`, many rows per statement (multi-row VALUES, parameterised). In upsert mode
 * the statements are `ON CONFLICT (key) DO UPDATE` and hold each key once, its latest row: PostgreSQL refuses a
 * statement that updates the same row twice, and within one transaction only the last row of a key stays anyway.
 */
export async function insertRows(client: pg.ClientBase, shape: RowShape, rows: readonly Row[], batchSize: number): Promise<void> {
  const perStatement = Math.max(1, Math.min(batchSize, Math.floor(MAX_PARAMETERS / shape.columns.length)));
  const prefix = `INSERT INTO ${shape.table.sql} (${shape.columns.map((c) => nodePostgres().escapeIdentifier(c)).join(', ')}) VALUES `;
  const suffix = conflictClause(shape);
  const unique = shape.key ? latestPerKey(shape, rows) : rows;
  for (let start = 0; start < unique.length; start += perStatement) {
    const batch = unique.slice(start, start + perStatement);
    const values: Json[] = [];
    const tuples: string[] = [];
    for (const row of batch) {
      const base = values.length;
      tuples.push(`(${row.map((_, i) => `$${base + i + 1}`).join(', ')})`);
      for (const cell of row) values.push(cell);
    }
    await client.query(prefix + tuples.join(', ') + suffix, values);
  }
}

function conflictClause(shape: RowShape): string {
  if (!shape.key) return '';
  const key = new Set(shape.key);
  const updated = shape.columns.filter((column) => !key.has(column));
  const target = shape.key.map((c) => nodePostgres().escapeIdentifier(c)).join(', ');
  if (updated.length === 0) return ` ON CONFLICT (${target}) DO NOTHING`;
  return ` ON CONFLICT (${target}) DO UPDATE SET ${updated.map((c) => `${nodePostgres().escapeIdentifier(c)} = EXCLUDED.${nodePostgres().escapeIdentifier(c)}`).join(', ')}`;
}

/**
 * The rows of `batch` with each key's last row only, in the order of those last rows: what an upsert of `batch` in
 * one transaction leaves in the table. The write-ahead sink keeps only these in its checkpoints.
 */
export function latestPerKey(shape: RowShape, batch: readonly Row[]): Row[] {
  const indexes = shape.key!.map((column) => shape.columns.indexOf(column));
  const latest = new Map<string, Row>();
  for (const row of batch) {
    const id = JSON.stringify(indexes.map((i) => row[i]));
    latest.delete(id);
    latest.set(id, row);
  }
  return latest.size === batch.length ? [...batch] : [...latest.values()];
}

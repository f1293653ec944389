import type pg from 'pg';
import type { RowShape, Row } from './postgresRows.js';

/** What a PostgreSQL sink writer works with, prepared by `postgresSink` at open. */
export interface SinkSetup<T> {
  readonly pool: pg.Pool;
  readonly job: string;
  readonly uid: string;
  /** The application_name prefix of every attempt of this sink (job and uid hashed), and this attempt's full name. */
  readonly sinkTag: string;
  readonly attempt: string;
  readonly shape: RowShape;
  readonly batchSize: number;
  readonly tolerableCommitFailures: number;
  readonly makeRow: (value: T) => Row;
}

/** The sink as messages name it. */
export const sinkName = (setup: Pick<SinkSetup<never>, 'uid' | 'shape' | 'job'>): string => `postgresSink '${setup.uid}' (table '${setup.shape.table.name}'${setup.job ? `, job '${setup.job}'` : ''})`;

/**
 * One task at a time, in order: a commit never interleaves with another or with the writes it depends on. A failed
 * task does not stop later ones (the caller decides what a failure means).
 */
export function serialQueue(): <R>(task: () => Promise<R>) => Promise<R> {
  let tail: Promise<unknown> = Promise.resolve();
  return (task) => {
    const result = tail.then(task);
    tail = result.catch(() => undefined);
    return result;
  };
}

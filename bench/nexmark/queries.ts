// The Nexmark queries of the bench, in the order they run and are reported.
import type { NexmarkQuery } from './nexmarkQuery';
import { q1 } from './q1';
import { q2 } from './q2';
import { q3 } from './q3';
import { q5 } from './q5';
import { q7 } from './q7';
import { q8 } from './q8';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each query has its own result type
export const nexmarkQueries: readonly NexmarkQuery<any>[] = [q1, q2, q3, q5, q7, q8];

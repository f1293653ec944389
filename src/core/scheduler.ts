import type { SchedulerLike } from 'rxjs';

/** Time as the job sees it: any RxJS scheduler (`asyncScheduler` by default, a `TestScheduler` in tests). */
export type Scheduler = SchedulerLike;

import { checkOptions } from '../core/checkOptions.js';
import { JobDefinitionError } from '../core/errors.js';

/**
 * What a job does when a user function (or a checkpoint) fails, as Flink's restart strategies:
 * - `none`: fail the job (the default here, unlike Flink which restarts by default when checkpointing is on: a
 *   library should not retry a bug forever unless asked);
 * - `fixed-delay`: restore from the latest completed checkpoint after `delay` ms, at most `attempts` times;
 * - `exponential-delay`: the delay starts at `initialDelay` and is multiplied by `multiplier` up to `maxDelay`.
 */
export type RestartStrategyOptions =
  | { strategy: 'none' }
  | { strategy: 'fixed-delay'; attempts: number; delay?: number }
  | { strategy: 'exponential-delay'; attempts?: number; initialDelay?: number; maxDelay?: number; multiplier?: number };

/** The delay before restart number `restart` (1-based), or undefined when the job must fail. */
export type RestartStrategy = (restart: number) => number | undefined;

/** The option names of each strategy. */
const RESTART_OPTIONS: Record<RestartStrategyOptions['strategy'], string[]> = {
  none: ['strategy'],
  'fixed-delay': ['strategy', 'attempts', 'delay'],
  'exponential-delay': ['strategy', 'attempts', 'initialDelay', 'maxDelay', 'multiplier'],
};

/** The strategy `options` describe; `where` (the job's `restart` option) goes into errors. */
export function restartStrategy(options: RestartStrategyOptions = { strategy: 'none' }, where = 'restart'): RestartStrategy {
  const known = Object.hasOwn(RESTART_OPTIONS, String(options?.strategy)) ? RESTART_OPTIONS[options.strategy] : undefined;
  if (known) checkOptions(`${where} (strategy '${options.strategy}')`, options, known);
  switch (options.strategy) {
    case 'none':
      return () => undefined;
    case 'fixed-delay': {
      const { attempts, delay = 1000 } = options;
      check(attempts >= 0 && delay >= 0, options);
      return (restart) => (restart <= attempts ? delay : undefined);
    }
    case 'exponential-delay': {
      const { attempts = Infinity, initialDelay = 1000, maxDelay = 300_000, multiplier = 2 } = options;
      check(attempts >= 0 && initialDelay >= 0 && maxDelay >= initialDelay && multiplier >= 1, options);
      return (restart) => (restart <= attempts ? Math.min(maxDelay, initialDelay * multiplier ** (restart - 1)) : undefined);
    }
    default:
      throw new JobDefinitionError(`unknown restart strategy ${JSON.stringify(options)}; use 'none', 'fixed-delay' or 'exponential-delay'`);
  }
}

function check(valid: boolean, options: RestartStrategyOptions): void {
  if (!valid) throw new JobDefinitionError(`invalid restart options ${JSON.stringify(options)}: attempts and delays must be ≥ 0, multiplier ≥ 1`);
}

/**
 * A copy of `factory` compiled on its own, for one operator instance: the functions it makes then learn the types and
 * call targets of that instance only.
 *
 * Why: V8 keeps what a function learned at run time (which function a call reaches, which shapes a property read
 * sees) per function literal, shared by every closure made from it, and optimizes once for all of them. A record's
 * way through weir is a few such closures per operator (a chain's link, a keyed operator's key switch); in a process
 * running several jobs each of their call sites reaches many functions (every job's filters, key selectors,
 * operators), turns megamorphic and is no longer inlined: Nexmark Q7 cost 1.4× the CPU time after the other queries
 * ran in the same process than before. A copy per instance keeps each one's sites monomorphic, so V8 inlines the
 * operators of a chain into one another again, as it does when one job runs alone.
 *
 * `factory` must be self-contained: it may use its parameters and globals, never a binding of its module (the copy
 * is compiled outside it), and its source must be a function expression or arrow. Where code cannot be compiled at
 * run time (a Content-Security-Policy without 'unsafe-eval'), `factory` itself is used: the same behaviour, with
 * shared feedback.
 */
export function ownCopy<F extends (...args: never[]) => unknown>(factory: F): F {
  if (!compiles) return factory;
  try {
    // `__name`: what esbuild's keepNames wraps functions in, given here in case a build of weir was made with it.
    // eslint-disable-next-line @typescript-eslint/no-implied-eval -- compiling a copy at run time is the point (see above)
    const compile = new Function('__name', `return (${factory.toString()});`) as (name: typeof keepName) => F;
    return compile(keepName);
  } catch (error) {
    if (error instanceof EvalError) compiles = false;
    return factory;
  }
}

/** False once compiling code at run time was refused: the platform will not allow it later either. */
let compiles = true;

const keepName = <T>(fn: T): T => fn;

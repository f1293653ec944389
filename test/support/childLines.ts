import type { ChildProcess } from 'node:child_process';

/** What a child process printed on its stdout, line by line as it comes, and a wait for a line. */
export interface ChildLines {
  readonly lines: string[];
  /** Resolves with the first line from line `from` on (0 by default) for which `match` holds; waits for it if need be. */
  waitFor(match: (line: string) => boolean, from?: number): Promise<string>;
}

/** Reads `child`'s stdout (spawned with `stdio: [..., 'pipe', ...]`) into lines; member processes report their progress so. */
export function childLines(child: ChildProcess): ChildLines {
  const lines: string[] = [];
  const waiters: { match: (line: string) => boolean; resolve: (line: string) => void }[] = [];
  let pending = '';
  child.stdout!.on('data', (data: Buffer) => {
    pending += data.toString();
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (!waiter.match(line)) continue;
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  return {
    lines,
    waitFor: (match, from = 0) => {
      const seen = lines.slice(from).find(match);
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ match, resolve }));
    },
  };
}

/** Kills every child of `children` still running (a paused one too: SIGCONT, then SIGKILL), empties the list, and waits for their exits. */
export async function killChildren(children: { readonly process: ChildProcess; readonly exited: Promise<unknown> }[]): Promise<void> {
  for (const child of children.splice(0)) {
    if (child.process.exitCode === null && child.process.signalCode === null) {
      child.process.kill('SIGCONT');
      child.process.kill('SIGKILL');
    }
    await child.exited;
  }
}

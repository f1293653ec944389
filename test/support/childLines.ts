import { execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';

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

/** A member process of a scale-out test: its name, the process, what it printed, and its exit code once it exited. */
export interface MemberChild extends ChildLines {
  readonly name: string;
  readonly process: ChildProcess;
  exited: Promise<number | null>;
}

/** Runs the `weir` command (`bin/weir.js` under `root`) to its end: its exit code and what it printed. */
export async function runWeirCommand(root: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [`${root}/bin/weir.js`, ...args], { encoding: 'utf8' });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

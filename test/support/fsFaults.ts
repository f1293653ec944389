// A fault layer over `node:fs/promises`, for tests of how weir reports file system errors (test/node/fsErrors.test.ts).
// A test file installs it with
//   vi.mock('node:fs/promises', async (importOriginal) => (await import('../support/fsFaults')).faultyFs(await importOriginal()));
// and then marks directories as full, read-only or forbidden: every call under them fails the way Linux fails it,
// with the errno, syscall and path Node puts on its errors. This module must not import node:fs/promises itself.
import type * as fsPromises from 'node:fs/promises';

type Fs = typeof fsPromises;
export type FsFault = 'full' | 'read-only' | 'denied';

const faults = new Map<string, FsFault>();

/** Makes every call on a path under `dir` fail as `fault` says, until `healFs()`. */
export function breakFs(dir: string, fault: FsFault): void {
  faults.set(dir, fault);
}

export function healFs(): void {
  faults.clear();
}

const ERRNO = { ENOSPC: -28, EROFS: -30, EACCES: -13, ENOENT: -2 } as const;
const TEXT = { ENOSPC: 'no space left on device', EROFS: 'read-only file system', EACCES: 'permission denied', ENOENT: 'no such file or directory' };

function systemError(code: keyof typeof ERRNO, syscall: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${TEXT[code]}, ${syscall} '${path}'`), { errno: ERRNO[code], code, syscall, path });
}

function faultOf(path: unknown): FsFault | undefined {
  if (typeof path !== 'string') return undefined;
  for (const [dir, fault] of faults) if (path === dir || path.startsWith(`${dir}/`)) return fault;
  return undefined;
}

/** The refusal of a write to a read-only or forbidden path; undefined when the path is healthy or only full. */
function refusal(path: unknown, syscall: string): NodeJS.ErrnoException | undefined {
  const fault = faultOf(path);
  if (fault === 'read-only') return systemError('EROFS', syscall, String(path));
  if (fault === 'denied') return systemError('EACCES', syscall, String(path));
  return undefined;
}

const writes = (flags: unknown) => typeof flags === 'string' && /[wa+]/.test(flags);

export async function faultyFs(actual: Fs): Promise<Fs> {
  const exists = (path: string) => actual.stat(path).then(() => true, () => false);
  /** A handle whose writes fail with ENOSPC, as on a full disk (the file itself can be created). */
  const fullHandle = (handle: fsPromises.FileHandle, path: string): fsPromises.FileHandle =>
    new Proxy(handle, {
      get(target, key) {
        if (key === 'write' || key === 'writeFile' || key === 'appendFile') return () => Promise.reject(systemError('ENOSPC', 'write', path));
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const refuse = <A extends unknown[], R>(syscall: string, call: (...args: A) => Promise<R>) =>
    (async (...args: A): Promise<R> => {
      const error = refusal(args[0], syscall);
      if (error) throw error;
      return call(...args);
    }) as (...args: A) => Promise<R>;

  return {
    ...actual,
    default: actual,
    async mkdir(path: Parameters<Fs['mkdir']>[0], options?: Parameters<Fs['mkdir']>[1]) {
      const fault = faultOf(path);
      if ((fault === 'read-only' || fault === 'denied') && !(await exists(String(path)))) {
        // What Node's recursive mkdir reports under a read-only parent: ENOENT, not EROFS.
        const recursive = typeof options === 'object' && options?.recursive === true;
        throw recursive && fault === 'read-only' ? systemError('ENOENT', 'mkdir', String(path)) : refusal(path, 'mkdir');
      }
      return actual.mkdir(path, options);
    },
    async open(path: Parameters<Fs['open']>[0], flags?: Parameters<Fs['open']>[1], mode?: Parameters<Fs['open']>[2]) {
      if (writes(flags)) {
        const error = refusal(path, 'open');
        if (error) throw error;
      }
      const handle = await actual.open(path, flags, mode);
      return faultOf(path) === 'full' && writes(flags) ? fullHandle(handle, String(path)) : handle;
    },
    async writeFile(path: Parameters<Fs['writeFile']>[0], ...rest: [Parameters<Fs['writeFile']>[1], Parameters<Fs['writeFile']>[2]?]) {
      const error = refusal(path, 'open') ?? (faultOf(path) === 'full' ? systemError('ENOSPC', 'write', String(path)) : undefined);
      if (error) throw error;
      return actual.writeFile(path, ...rest);
    },
    async access(path: Parameters<Fs['access']>[0], mode?: number) {
      // On a read-only mount even root is refused W_OK (the kernel checks the mount, not the mode bits).
      if (mode !== undefined && (mode & actual.constants.W_OK) !== 0) {
        const error = refusal(path, 'access');
        if (error) throw error;
      }
      return actual.access(path, mode);
    },
    link: refuse('link', actual.link),
    rename: refuse('rename', actual.rename),
    unlink: refuse('unlink', actual.unlink),
    rm: refuse('rm', actual.rm),
    utimes: refuse('utime', actual.utimes),
  } as Fs;
}

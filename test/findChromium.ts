import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Debian's Chromium (`apt-get install chromium`), found on PATH; playwright's own browser downloads are not used.
 * Shared by the vitest browser project (vite.config.ts) and the end-to-end tests (test/e2e).
 */
export function findChromium(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      const path = join(dir, name);
      if (dir !== '' && existsSync(path)) return path;
    }
  }
  return undefined;
}

export const CHROMIUM_ADVICE = 'Install it with `sudo apt-get install -y chromium` (Debian/Ubuntu), or put a chromium binary on PATH.';

/** As root (CI) Chromium needs --no-sandbox; the rest keeps it off the network, which is closed here. */
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

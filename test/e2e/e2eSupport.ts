import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { build, preview, type PreviewServer } from 'vite';
import { CHROMIUM_ADVICE, CHROMIUM_ARGS, findChromium } from '../findChromium';

/**
 * End-to-end tests drive Debian's Chromium with playwright-core. Where Chromium is missing they are skipped loudly,
 * and under CI=true that is a failure (the policy of the vitest browser project in vite.config.ts).
 */
export const chromiumPath = findChromium();
if (!chromiumPath) {
  if (process.env.CI === 'true') throw new Error(`Chromium was not found on PATH, and CI must run the end-to-end tests. ${CHROMIUM_ADVICE}`);
  const bar = '!'.repeat(100);
  console.warn(`\n${bar}\n!! Chromium not found on PATH: the END-TO-END tests (test/e2e) are SKIPPED.\n!! ${CHROMIUM_ADVICE}\n${bar}\n`);
}

export const playgroundConfig = fileURLToPath(new URL('../../playground/vite.config.ts', import.meta.url));
export const artifacts = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

/** Builds the playground app (both pages) into a fresh temporary directory. */
export async function buildPlayground(): Promise<string> {
  const outDir = await mkdtemp(join(tmpdir(), 'weir-playground-'));
  await build({ configFile: playgroundConfig, logLevel: 'warn', build: { outDir, emptyOutDir: true } });
  return outDir;
}

/** Serves a built playground with `vite preview` on 127.0.0.1 and a free port. */
export async function previewPlayground(outDir: string): Promise<{ url: string; server: PreviewServer }> {
  const server = await preview({ configFile: playgroundConfig, logLevel: 'warn', build: { outDir }, preview: { host: '127.0.0.1', port: 0, strictPort: false, open: false } });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report its URL');
  return { url, server };
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_ARGS, headless: true });
}

export async function artifactPath(name: string): Promise<string> {
  await mkdir(artifacts, { recursive: true });
  return join(artifacts, name);
}

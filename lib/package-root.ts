/**
 * Where ccm-migrate's own files are, wherever its code runs from: the clone (TypeScript under lib/), the
 * installed package (JavaScript under dist/lib/, one level deeper) or a Lambda bundle (one index.mjs, next
 * to the assets/ the stack copies beside it). A fixed `../../assets` from a module's URL is right in only
 * one of those layouts; the nearest directory holding assets/ is right in all three.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as z from 'zod';

function rootAbove(dir: string): string {
  for (let d = dir; ; d = path.dirname(d)) {
    if (existsSync(path.join(d, 'assets'))) return d;
    if (path.dirname(d) === d)
      throw new Error(`no assets/ directory above ${dir}: ccm-migrate is incomplete`);
  }
}

let root: string | undefined;

/** Looked up on first use: a function bundle that never reads a file of ours has no assets/ to find. */
export function packageRoot(): string {
  root ??= rootAbove(path.dirname(fileURLToPath(import.meta.url)));
  return root;
}

/** A file of the package, by its path from the package root (`assets/twins/aws-ha.yaml`). */
export function packageFile(relative: string): string {
  return path.join(packageRoot(), relative);
}

/**
 * The module at `relative` (no extension) from `fromUrl`, with the extension of `fromUrl` itself: `.ts` in
 * the clone, `.js` once built. For what is loaded by URL at run time (a worker, an esbuild entry point),
 * which no build step rewrites.
 */
export function moduleUrl(fromUrl: string, relative: string): URL {
  return new URL(`${relative}${path.extname(new URL(fromUrl).pathname)}`, fromUrl);
}

/** `ccm-migrate --version`: the version in the package's package.json. */
export function packageVersion(): string {
  const manifest: unknown = JSON.parse(readFileSync(packageFile('package.json'), 'utf8'));
  return z.object({ version: z.string() }).parse(manifest).version;
}

/**
 * The agent as one file: lib/agent/main.ts and everything it imports (zod, yaml, diff) bundled by esbuild
 * into an ES module for Node 22, shipped to nodes in a ConfigMap, so any image with Node 22 (and nsenter,
 * which the Job checks) can run it. The Job's launcher imports it and calls `agentMain`.
 * A Lambda function cannot run esbuild, so the CDK stack builds the bundle when it bundles the function and
 * ships it next to the function's code (`agent.mjs`); without that file it is built here, once per process.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { moduleUrl } from '../package-root.ts';

/** The prebuilt bundle's file name, next to the module that imports this one once bundled. */
export const PREBUILT_AGENT_FILE = 'agent.mjs';

/**
 * CommonJS dependencies (yaml, and the Kubernetes client's) require Node built-ins, which an ES module
 * bundle gets through a `require` made here.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as ccmCreateRequire } from 'node:module'; const require = ccmCreateRequire(import.meta.url);";

let bundle: Promise<string> | undefined;

/** Build the bundle with esbuild (loaded only when needed: a Lambda function ships without it). */
export async function buildAgentBundle(): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [fileURLToPath(moduleUrl(import.meta.url, './main'))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minify: true,
    write: false,
    logLevel: 'silent',
    banner: { js: ESM_REQUIRE_BANNER },
  });
  const file = result.outputFiles[0];
  if (!file) throw new Error('esbuild produced no agent bundle');
  return file.text;
}

async function prebuiltOrBuild(): Promise<string> {
  try {
    return await readFile(new URL(`./${PREBUILT_AGENT_FILE}`, import.meta.url), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return buildAgentBundle();
  }
}

/** The agent bundle's source (a failed build is not remembered: the next call tries again). */
export function agentBundle(): Promise<string> {
  bundle ??= prebuiltOrBuild().catch((err: unknown) => {
    bundle = undefined;
    throw err;
  });
  return bundle;
}

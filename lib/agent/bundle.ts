/**
 * The agent as one file: lib/agent/main.ts and everything it imports (zod, yaml, diff) bundled by esbuild
 * into an ES module for Node 22, shipped to nodes in a ConfigMap, so any Node 22 image can run it.
 * Built once per process.
 */
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

let bundle: Promise<string> | undefined;

async function buildBundle(): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('./main.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minify: true,
    write: false,
    logLevel: 'silent',
    // yaml's Node build is CommonJS and requires Node built-ins, which an ES module gets through require.
    banner: {
      js: "import { createRequire as ccmCreateRequire } from 'node:module'; const require = ccmCreateRequire(import.meta.url);",
    },
  });
  const file = result.outputFiles[0];
  if (!file) throw new Error('esbuild produced no agent bundle');
  return file.text;
}

/** The agent bundle's source (a failed build is not remembered: the next call tries again). */
export function agentBundle(): Promise<string> {
  bundle ??= buildBundle().catch((err: unknown) => {
    bundle = undefined;
    throw err;
  });
  return bundle;
}

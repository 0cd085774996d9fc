/**
 * `npm run build` (and `npm pack`, through prepack): the package's JavaScript and declarations under dist/,
 * for Node, which does not strip types under node_modules. tsc emits without checking (`--noCheck`): the
 * check is `npm run typecheck`'s, and the emit alone takes a third of the time. Relative imports are
 * rewritten from `.ts` to `.js` (rewriteRelativeImportExtensions); the one data file read beside its
 * module is copied. assets/ ships as it is, beside dist/ (lib/package-root.ts finds it from either).
 * The node agent is bundled once here, beside the module that ships it (lib/agent/bundle.ts): the CLI and
 * each function a stack bundles take it as it is instead of running esbuild for it again.
 */
import { execFileSync } from 'node:child_process';
import { cp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAgentBundle, PREBUILT_AGENT_FILE } from '../../lib/agent/bundle.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = path.join(ROOT, 'dist');
const DATA_FILES = ['lib/twin/api/protobuf-schema.json'];

await rm(DIST, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json'), '--noCheck'], {
  stdio: 'inherit',
});
for (const file of DATA_FILES) await cp(path.join(ROOT, file), path.join(DIST, file));
await writeFile(path.join(DIST, 'lib/agent', PREBUILT_AGENT_FILE), await buildAgentBundle());

/**
 * `node cdk/function-files.ts <dir>`: what a function that talks to a cluster ships beside its bundle in
 * <dir>: the node agent's bundle (lib/agent/bundle.ts: the package's prebuilt one, else built now) and the
 * provider manifests the CCM is rendered from (lib/providers/render.ts reads them from the nearest
 * assets/). The stack runs it after bundling each such function.
 */
import { cp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { agentBundle, PREBUILT_AGENT_FILE } from '../lib/agent/bundle.ts';
import { packageFile } from '../lib/package-root.ts';

const out = process.argv[2];
if (!out) throw new Error('usage: node cdk/function-files.ts <output directory>');
await writeFile(path.join(out, PREBUILT_AGENT_FILE), await agentBundle());
await cp(packageFile('assets/providers'), path.join(out, 'assets/providers'), { recursive: true });

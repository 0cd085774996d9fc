/**
 * `node cdk/build-agent.ts <file>`: write the node agent's bundle to <file>. The stack runs it after bundling
 * each function that runs the agent, so the function ships the agent prebuilt (see lib/agent/bundle.ts).
 */
import { writeFile } from 'node:fs/promises';
import { buildAgentBundle } from '../lib/agent/bundle.ts';

const out = process.argv[2];
if (!out) throw new Error('usage: node cdk/build-agent.ts <output file>');
await writeFile(out, await buildAgentBundle());

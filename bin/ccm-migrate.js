#!/usr/bin/env node
// The CLI is TypeScript run by Node 22's type stripping: no build step between the source and what runs.
import { main } from '../lib/cli/main.ts';

process.exitCode = await main(process.argv.slice(2));

#!/usr/bin/env node
// In the clone, TypeScript run by Node 22's type stripping; the package runs the build of this file (dist/bin/).
import { main } from '../lib/cli/main.ts';

process.exitCode = await main(process.argv.slice(2));

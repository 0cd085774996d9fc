#!/usr/bin/env node
// The CLI is TypeScript run by Node 22's type stripping: no build step between the source and what runs.
import '../lib/cli/main.ts';

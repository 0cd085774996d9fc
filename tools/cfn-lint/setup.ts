/**
 * `npm run setup:cfn-lint`: cfn-lint and its dependencies, as tools/cfn-lint/requirements.txt pins them,
 * into .venv/cfn-lint with the python3 on PATH (3.9 or later). Run again, pip finds them installed.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { CFN_LINT, CFN_LINT_VENV, REQUIREMENTS } from './venv.ts';

const pip = `${CFN_LINT_VENV}bin/pip`;
if (!existsSync(pip)) execFileSync('python3', ['-m', 'venv', CFN_LINT_VENV], { stdio: 'inherit' });
execFileSync(pip, ['install', '--quiet', '--disable-pip-version-check', '-r', REQUIREMENTS], {
  stdio: 'inherit',
});
execFileSync(CFN_LINT, ['--version'], { stdio: 'inherit' });

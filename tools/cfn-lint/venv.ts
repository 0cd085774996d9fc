/** Where `npm run setup:cfn-lint` puts cfn-lint: a git-ignored virtual environment in the checkout. */
import { fileURLToPath } from 'node:url';

export const CFN_LINT_VENV = fileURLToPath(new URL('../../.venv/cfn-lint/', import.meta.url));
export const CFN_LINT = `${CFN_LINT_VENV}bin/cfn-lint`;
export const REQUIREMENTS = fileURLToPath(new URL('./requirements.txt', import.meta.url));

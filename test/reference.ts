/**
 * The upstream reference data some tests compare against: ../shared/reference, beside this checkout (upstream
 * manifests, Cluster API templates, kops nodeup golden files). `.ci/run` sets CCM_MIGRATE_CI=1: there a
 * missing directory fails those tests instead of leaving them out. Elsewhere they are left out with one
 * printed line that says why.
 */

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** ../shared/reference/ of the repository, with its trailing slash. */
export const REFERENCE_DIR = fileURLToPath(new URL('../../shared/reference/', import.meta.url));

let said = false;

/** Whether the reference-data tests run: the data is there, or CI requires it (then its absence fails them). */
export function referenceRuns(): boolean {
  if (existsSync(REFERENCE_DIR) || process.env.CCM_MIGRATE_CI === '1') return true;
  if (!said) {
    said = true;
    console.warn(
      'reference-data tests left out: ../shared/reference (upstream manifests, kubeadm and kops samples) is not beside this checkout',
    );
  }
  return false;
}

/**
 * Which API servers the twin tests run on: the in-process one always, and a real kube-apiserver when
 * `npm run setup:kube` has built it. `.ci/run` sets CCM_MIGRATE_REAL_API=required: there a missing binary
 * fails the real-API tests (with the command that builds it) instead of leaving them out. Elsewhere they
 * are left out with one printed line that says why.
 */

import { existsSync } from 'node:fs';
import { builtApiServers, etcdPath } from '../lib/twin/real/binaries.ts';

export interface ApiServerUnderTest {
  /** For test titles: `in-process API server` or `real kube-apiserver`. */
  readonly name: string;
  readonly realApi: boolean;
}

export const IN_PROCESS: ApiServerUnderTest = { name: 'in-process API server', realApi: false };
export const REAL: ApiServerUnderTest = { name: 'real kube-apiserver', realApi: true };

export const REAL_API_REQUIRED = process.env.CCM_MIGRATE_REAL_API === 'required';

/** Why the real-API tests cannot run here, or undefined when they can. */
export function realApiMissing(): string | undefined {
  if (!existsSync(etcdPath())) return 'etcd is not built';
  if (builtApiServers().length === 0) return 'no kube-apiserver is built';
  return undefined;
}

let said = false;

/** Whether the real-API tests run: built, or required (then a missing binary fails them). */
export function realApiRuns(): boolean {
  const missing = realApiMissing();
  if (!missing || REAL_API_REQUIRED) return true;
  if (!said) {
    said = true;
    console.warn(`real-API tests left out: ${missing} (run \`npm run setup:kube\` to include them)`);
  }
  return false;
}

/** The servers a twin test runs on, for describe.each. */
export function apiServersUnderTest(): ApiServerUnderTest[] {
  return realApiRuns() ? [IN_PROCESS, REAL] : [IN_PROCESS];
}

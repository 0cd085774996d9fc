/**
 * Where the real control-plane binaries live: `npm run setup:kube` builds kube-apiserver (one per
 * Kubernetes version) and etcd from their Go modules into a git-ignored cache, and the twin takes them
 * from there. `CCM_MIGRATE_KUBE_DIR` moves the cache.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { InvalidInputError } from '../../errors.ts';
import { packageFile } from '../../package-root.ts';

/** etcd 3.5 serves every Kubernetes minor from 1.22 to 1.30 (kubernetes/kubernetes' etcd version table). */
export const ETCD_VERSION = 'v3.5.21';

/** Where the example and test twin specs live: setup:kube builds each kubernetesVersion they name. */
const SPEC_DIRS = ['assets/twins', 'test/fixtures/twins'];

/** Every kubernetesVersion the example and test twin specs name, `v`-prefixed, sorted. */
export function twinSpecVersions(): string[] {
  const versions = new Set<string>();
  for (const dir of SPEC_DIRS) {
    for (const file of readdirSync(packageFile(dir))) {
      if (!file.endsWith('.yaml')) continue;
      const m = /^kubernetesVersion:\s*v?(\d+\.\d+\.\d+)\s*$/m.exec(
        readFileSync(packageFile(path.join(dir, file)), 'utf8'),
      );
      if (m) versions.add(`v${m[1]}`);
    }
  }
  return [...versions].sort();
}

export function kubeCacheDir(): string {
  return path.resolve(process.env.CCM_MIGRATE_KUBE_DIR || packageFile('.kube'));
}

export function apiServerPath(version: string): string {
  return path.join(kubeCacheDir(), 'bin', version, 'kube-apiserver');
}

export function etcdPath(): string {
  return path.join(kubeCacheDir(), 'bin', `etcd-${ETCD_VERSION}`, 'etcd');
}

function minorOf(version: string): string {
  return version.split('.').slice(0, 2).join('.');
}

function patchOf(version: string): number {
  return Number(version.split('.')[2] ?? 0);
}

/** The kube-apiserver versions the cache holds. */
export function builtApiServers(): string[] {
  const dir = path.join(kubeCacheDir(), 'bin');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((v) => /^v1\.\d+\.\d+$/.test(v) && existsSync(apiServerPath(v)))
    .sort((a, b) => minorOf(a).localeCompare(minorOf(b)) || patchOf(a) - patchOf(b));
}

export interface RealBinaries {
  readonly apiServer: string;
  /** The version of that kube-apiserver: the spec's, or the newest patch of its minor that is built. */
  readonly version: string;
  readonly etcd: string;
}

/**
 * The binaries for a twin of this Kubernetes version: that version's kube-apiserver, else the newest
 * patch of the same minor (a patch changes no API), and etcd. InvalidInputError names the command that
 * builds what is missing.
 */
export function findRealBinaries(version: string): RealBinaries {
  const setup = `npm run setup:kube -- --version ${version}`;
  const etcd = etcdPath();
  const sameMinor = builtApiServers().filter((v) => minorOf(v) === minorOf(version));
  const chosen = sameMinor.includes(version) ? version : sameMinor.at(-1);
  if (!chosen) {
    const built = builtApiServers();
    throw new InvalidInputError(
      `no kube-apiserver ${minorOf(version)}.x is built in ${kubeCacheDir()} (built: ${built.join(', ') || 'none'}): run \`${setup}\``,
    );
  }
  if (!existsSync(etcd))
    throw new InvalidInputError(`etcd is not built in ${kubeCacheDir()}: run \`${setup}\``);
  return { apiServer: apiServerPath(chosen), version: chosen, etcd };
}

/**
 * `npm run setup:kube`: builds the real kube-apiserver of every Kubernetes version the twin specs use
 * (or the ones given with --version), and etcd, from the Go module proxy into the git-ignored cache that
 * lib/twin/real/binaries.ts reads. Idempotent: a binary that is there and answers --version with its
 * version is kept, so a second run takes seconds.
 *
 * `go install k8s.io/kubernetes/cmd/kube-apiserver@vX` is refused (k8s.io/kubernetes' go.mod replaces its
 * staging modules with local paths), so each build is a small wrapper module that requires
 * k8s.io/kubernetes vX.Y.Z and replaces every staging module with its published v0.Y.Z.
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  apiServerPath,
  ETCD_VERSION,
  etcdPath,
  kubeCacheDir,
  twinSpecVersions,
} from '../../lib/twin/real/binaries.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));

class SetupError extends Error {
  /** 2 for what the user must fix (no Go, a bad --version), 1 for a failed build. */
  readonly exitCode: number;

  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = 'SetupError';
    this.exitCode = exitCode;
  }
}

/** The Go command: $CCM_MIGRATE_GO if set, else on PATH, else where the official tarball puts it. */
function findGo(): string {
  const candidates = process.env.CCM_MIGRATE_GO
    ? [process.env.CCM_MIGRATE_GO]
    : ['go', '/usr/local/go/bin/go'];
  for (const candidate of candidates) {
    try {
      execFileSync(candidate, ['version'], { stdio: 'ignore' });
      return candidate;
    } catch {}
  }
  throw new SetupError(
    `the Go toolchain was not found (tried ${candidates.join(', ')}): install Go 1.22 or later from https://go.dev/dl/ (or set CCM_MIGRATE_GO to the go command) and run \`npm run setup:kube\` again`,
    2,
  );
}

function goEnv(): NodeJS.ProcessEnv {
  // GOTOOLCHAIN=local: build with the Go that is here, never fetch another one; GOFLAGS: the wrapper
  // module lives inside this repository's git tree, whose state says nothing about the binary.
  return { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-buildvcs=false -mod=mod', CGO_ENABLED: '0' };
}

/** Run a go command in dir, its output to a log; the log's last lines in the error when it fails. */
function runGo(go: string, args: string[], dir: string, log: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(go, args, { cwd: dir, env: goEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => out.push(c));
    child.on('error', (err) => reject(new SetupError(`could not run ${go}: ${err.message}`)));
    child.on('close', (code) => {
      const text = Buffer.concat(out).toString();
      writeFileSync(log, text, { flag: 'a' });
      if (code === 0) return resolve();
      const tail = text.trim().split('\n').slice(-15).join('\n');
      reject(
        new SetupError(`\`go ${args.join(' ')}\` failed in ${dir} (exit ${code}); full log: ${log}\n${tail}`),
      );
    });
  });
}

/** The version a built binary reports, or undefined when it is missing or does not run. */
function reportedVersion(binary: string): string | undefined {
  if (!existsSync(binary)) return undefined;
  try {
    return execFileSync(binary, ['--version'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  } catch {
    return undefined;
  }
}

/** The wrapper module's go.mod: k8s.io/kubernetes at version, each staging module at v0.<minor>.<patch>. */
async function apiServerGoMod(go: string, version: string, dir: string, log: string): Promise<string> {
  let info: { GoMod?: string; Error?: string };
  try {
    const out = execFileSync(go, ['mod', 'download', '-json', `k8s.io/kubernetes@${version}`], {
      cwd: dir,
      env: goEnv(),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    info = JSON.parse(out) as typeof info;
  } catch (err) {
    const out = (err as { stdout?: string }).stdout ?? '';
    info = out.trim() ? (JSON.parse(out) as typeof info) : { Error: (err as Error).message };
  }
  writeFileSync(log, `${JSON.stringify(info, null, 2)}\n`, { flag: 'a' });
  if (!info.GoMod) {
    throw new SetupError(
      `the Go module proxy did not serve k8s.io/kubernetes@${version}: ${info.Error ?? 'no go.mod'}`,
    );
  }
  const upstream = readFileSync(info.GoMod, 'utf8');
  const staging = [...upstream.matchAll(/^\s*(k8s\.io\/[\w.-]+)\s+=>\s+\.\/staging\//gm)].map(
    (m) => m[1] as string,
  );
  if (staging.length === 0)
    throw new SetupError(`k8s.io/kubernetes ${version}'s go.mod replaces no staging module`);
  const published = `v0.${version.slice('v1.'.length)}`;
  return [
    'module ccm-migrate/tools/kube/kube-apiserver',
    '',
    'go 1.22',
    '',
    `require k8s.io/kubernetes ${version}`,
    '',
    'replace (',
    ...staging.map((m) => `\t${m} => ${m} ${published}`),
    ')',
    '',
  ].join('\n');
}

/** `-X` stamps of the version: /version reads k8s.io/client-go's copy on older minors, --version component-base's. */
function versionLdflags(version: string): string {
  const [major, minor] = version.slice(1).split('.');
  const buildDate = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return ['k8s.io/client-go/pkg/version', 'k8s.io/component-base/version']
    .flatMap((pkg) => [
      `-X ${pkg}.gitVersion=${version}`,
      `-X ${pkg}.gitMajor=${major}`,
      `-X ${pkg}.gitMinor=${minor}`,
      `-X ${pkg}.gitTreeState=clean`,
      `-X ${pkg}.buildDate=${buildDate}`,
    ])
    .join(' ');
}

function elapsed(since: number): string {
  const s = Math.round((Date.now() - since) / 1000);
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

/** Whether the proxy serves this module version whole (its .info, go.mod checksum and zip). */
function served(go: string, module: string, version: string, dir: string): boolean {
  try {
    execFileSync(go, ['mod', 'download', '-json', `${module}@${version}`], {
      cwd: dir,
      env: goEnv(),
      stdio: 'ignore',
    });
    return true;
  } catch {
    return false;
  }
}

/**
 * `go mod tidy`, where a staging module's v0.Y.Z is refused by the proxy ("This module version is not
 * available": k8s.io/cluster-bootstrap v0.25.16, for one) replaced by the newest older patch of the same
 * minor that is served; a patch release changes nothing kube-apiserver uses of those utility modules.
 */
async function tidy(go: string, dir: string, log: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await runGo(go, ['mod', 'tidy'], dir, log);
      return;
    } catch (err) {
      const refused = /(k8s\.io\/[\w.-]+)@(v0\.\d+)\.(\d+): (?:reading|verifying)/.exec(
        (err as Error).message,
      );
      if (!refused || attempt >= 10) throw err;
      const [, module, minor, patch] = refused as unknown as [string, string, string, string];
      let replacement: string | undefined;
      for (let p = Number(patch) - 1; p >= 0 && !replacement; p--) {
        if (served(go, module, `${minor}.${p}`, dir)) replacement = `${minor}.${p}`;
      }
      if (!replacement) throw err;
      console.log(`  ${module} ${minor}.${patch} is not served by the module proxy: using ${replacement}`);
      const goMod = path.join(dir, 'go.mod');
      const text = readFileSync(goMod, 'utf8').replace(
        `${module} => ${module} ${minor}.${patch}`,
        `${module} => ${module} ${replacement}`,
      );
      writeFileSync(goMod, text);
    }
  }
}

async function build(opts: {
  go: string;
  name: string;
  target: string;
  main: string;
  goMod: (dir: string, log: string) => Promise<string>;
  ldflags: string;
}): Promise<void> {
  const src = path.join(kubeCacheDir(), 'src', opts.name);
  mkdirSync(src, { recursive: true });
  const log = path.join(src, 'build.log');
  writeFileSync(log, '');
  writeFileSync(path.join(src, 'go.mod'), 'module ccm-migrate/tools/kube/wrapper\n\ngo 1.22\n');
  writeFileSync(path.join(src, 'go.mod'), await opts.goMod(src, log));
  copyFileSync(opts.main, path.join(src, 'main.go'));
  await tidy(opts.go, src, log);
  mkdirSync(path.dirname(opts.target), { recursive: true });
  // Built beside the target and renamed: a cut build never leaves a binary that looks complete.
  const partial = `${opts.target}.partial`;
  await runGo(
    opts.go,
    ['build', '-trimpath', '-ldflags', `-s -w ${opts.ldflags}`, '-o', partial, '.'],
    src,
    log,
  );
  renameSync(partial, opts.target);
}

async function ensureApiServer(go: string, version: string): Promise<void> {
  const target = apiServerPath(version);
  if (reportedVersion(target) === `Kubernetes ${version}`) {
    console.log(`kube-apiserver ${version}: present (${target})`);
    return;
  }
  const started = Date.now();
  console.log(
    `kube-apiserver ${version}: building from k8s.io/kubernetes@${version} (2-5 min on 2 cores; longer on a cold module cache)…`,
  );
  await build({
    go,
    name: `kube-apiserver-${version}`,
    target,
    main: path.join(HERE, 'kube-apiserver', 'main.go'),
    goMod: (dir, log) => apiServerGoMod(go, version, dir, log),
    ldflags: versionLdflags(version),
  });
  const got = reportedVersion(target);
  if (got !== `Kubernetes ${version}`)
    throw new SetupError(`the built ${target} reports ${got ?? 'nothing'}, not Kubernetes ${version}`);
  console.log(`kube-apiserver ${version}: built in ${elapsed(started)}`);
}

async function ensureEtcd(go: string): Promise<void> {
  const target = etcdPath();
  if (reportedVersion(target)?.includes(`etcd Version: ${ETCD_VERSION.slice(1)}`)) {
    console.log(`etcd ${ETCD_VERSION}: present (${target})`);
    return;
  }
  const started = Date.now();
  console.log(`etcd ${ETCD_VERSION}: building from go.etcd.io/etcd/server/v3@${ETCD_VERSION}…`);
  await build({
    go,
    name: `etcd-${ETCD_VERSION}`,
    target,
    main: path.join(HERE, 'etcd', 'main.go'),
    goMod: async () =>
      [
        'module ccm-migrate/tools/kube/etcd',
        '',
        'go 1.22',
        '',
        `require go.etcd.io/etcd/server/v3 ${ETCD_VERSION}`,
        '',
      ].join('\n'),
    ldflags: '',
  });
  console.log(`etcd ${ETCD_VERSION}: built in ${elapsed(started)}`);
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { version: { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log(
      'usage: npm run setup:kube [-- --version vX.Y.Z ...]\n\nBuilds kube-apiserver for each version (default: every kubernetesVersion of the twin specs in assets/twins and test/fixtures/twins) and etcd into .kube/ (CCM_MIGRATE_KUBE_DIR moves it). Needs Go 1.22+ (CCM_MIGRATE_GO names it) and the Go module proxy.',
    );
    return 0;
  }
  const versions = (values.version ?? twinSpecVersions()).map((v) => `v${v.replace(/^v/, '')}`);
  const bad = versions.filter((v) => !/^v1\.\d+\.\d+$/.test(v));
  if (bad.length)
    throw new SetupError(`not a Kubernetes version: ${bad.join(', ')} (expected e.g. v1.26.15)`, 2);
  const go = findGo();
  const started = Date.now();
  await ensureEtcd(go);
  for (const version of versions) await ensureApiServer(go, version);
  console.log(`setup:kube done in ${elapsed(started)}: ${kubeCacheDir()}`);
  return 0;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (!(err instanceof SetupError) && !(err instanceof TypeError)) throw err;
  console.error(`setup:kube: ${err.message}`);
  process.exitCode = err instanceof SetupError ? err.exitCode : 2;
}

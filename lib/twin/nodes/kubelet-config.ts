/**
 * What a kubelet starts with, read from its node's files as systemd and the kubelet read them: the
 * command line of kubelet.service with its drop-ins and environment files (systemd-unit.ts; kubeadm's
 * drop-in runs `kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS
 * $KUBELET_EXTRA_ARGS`, but a host may have any other), its flags read as pflag reads them, then the
 * KubeletConfiguration file named by --config, then the drop-ins of --config-dir merged over it, whose
 * featureGates the flags override gate by gate.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { hostPath } from '../context.ts';
import { readCommandLine } from './command-line.ts';
import { pluginStartProblem } from './image-pulls.ts';
import { serviceCommand } from './systemd-unit.ts';

/** The unit the kubelet package installs, for a host that keeps only its drop-ins. */
const PACKAGE_UNIT = '[Service]\nExecStart=/usr/bin/kubelet\n';

export interface KubeletStartConfig {
  /** The kubelet's command line, program first, as systemd starts it. */
  readonly argv: readonly string[];
  /** Every flag the kubelet runs with, by name (the config file's feature gates merged under the flags'). */
  readonly flags: ReadonlyMap<string, string>;
  /** Absolute host path of the static pod directory; '' when the kubelet runs no static pods. */
  readonly staticPodPath: string;
  /** Why the kubelet exits at start, when it does (the error it logs). */
  readonly problem?: string;
  /**
   * Why it exits registering its credential plugins, which it does after its flags and cloud provider
   * passed (pkg/kubelet/kuberuntime, NewKubeGenericRuntimeManager).
   */
  readonly pluginProblem?: string;
}

interface KubeletConfiguration {
  staticPodPath?: unknown;
  featureGates?: unknown;
}

/**
 * 1.28 and 1.29 start a kubelet with --config-dir only when this variable is in its environment (alpha,
 * cmd/kubelet/app/server.go); 1.30 (beta) reads the directory without it, and before 1.28 the flag is
 * unknown.
 */
const DROP_IN_ALPHA_VARIABLE = 'KUBELET_CONFIG_DROPIN_DIR_ALPHA';
const DROP_IN_FIRST_MINOR = 28;
const DROP_IN_BETA_MINOR = 30;

/** Parsed config files by content: thousands of nodes share one KubeletConfiguration text. */
const configCache = new Map<string, KubeletConfiguration | string>();

function readOptional(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}

function listOptional(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw err;
  }
}

/** The KubeletConfiguration of a config file's text, or the error the kubelet reports for it. */
function parseConfig(text: string): KubeletConfiguration | string {
  const cached = configCache.get(text);
  if (cached !== undefined) return cached;
  let parsed: KubeletConfiguration | string;
  try {
    const doc: unknown = parseYaml(text);
    parsed =
      doc && typeof doc === 'object' && (doc as { kind?: unknown }).kind === 'KubeletConfiguration'
        ? (doc as KubeletConfiguration)
        : 'the file is not a KubeletConfiguration';
  } catch (err) {
    parsed = String((err as Error).message).split('\n')[0] ?? 'invalid YAML';
  }
  if (configCache.size > 1000) configCache.clear();
  configCache.set(text, parsed);
  return parsed;
}

function asGates(gates: unknown): Record<string, unknown> {
  return gates && typeof gates === 'object' ? (gates as Record<string, unknown>) : {};
}

/** The config's featureGates as `A=true,B=false`. */
function configGates(config: KubeletConfiguration): string {
  return Object.entries(asGates(config.featureGates))
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(',');
}

/**
 * The `*.conf` files of a --config-dir, as filepath.WalkDir visits them: each directory's entries in
 * name order, a subdirectory's files where its name sorts. A missing directory stops the kubelet.
 */
function dropInFiles(dir: string, onHost: (file: string) => string): string[] | string {
  try {
    if (!statSync(onHost(dir)).isDirectory()) return dir.endsWith('.conf') ? [dir] : [];
  } catch {
    return `lstat ${dir}: no such file or directory`;
  }
  return readdirSync(onHost(dir), { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((entry) => {
      const path = `${dir.replace(/\/+$/, '')}/${entry.name}`;
      if (entry.isDirectory()) {
        const inner = dropInFiles(path, onHost);
        return typeof inner === 'string' ? [] : inner;
      }
      return entry.name.endsWith('.conf') ? [path] : [];
    });
}

/**
 * The drop-ins of --config-dir merged over the config file, a JSON merge patch each in WalkDir's order
 * (mergeKubeletConfigurations): a later file's staticPodPath wins, featureGates merge gate by gate. The
 * string is the error the kubelet exits with.
 */
function mergeDropIns(
  dir: string,
  base: KubeletConfiguration,
  onHost: (file: string) => string,
): KubeletConfiguration | string {
  const failed = (why: string): string =>
    `failed to merge kubelet configs: failed to walk through kubelet dropin directory "${dir}": ${why}`;
  const files = dropInFiles(dir, onHost);
  if (typeof files === 'string') return failed(files);
  let merged: KubeletConfiguration = base;
  for (const file of files) {
    const text = readOptional(onHost(file)) ?? '';
    const dropIn = text === '' ? `kubelet config file "${file}" was empty` : parseConfig(text);
    if (typeof dropIn === 'string') {
      return failed(`failed to load kubelet dropin file, path: ${file}, error: ${dropIn}`);
    }
    const gates = { ...asGates(merged.featureGates), ...asGates(dropIn.featureGates) };
    merged = { ...merged, ...dropIn, featureGates: gates };
  }
  return merged;
}

/**
 * Read a node's kubelet command line, flags and static pod directory. A missing config file means kubeadm's
 * staticPodPath (/etc/kubernetes/manifests).
 */
export function readKubeletStartConfig(stateDir: string, node: string, minor: number): KubeletStartConfig {
  const onHost = (file: string): string => hostPath(stateDir, node, file);
  const service = serviceCommand(
    'kubelet.service',
    (file) => readOptional(onHost(file)),
    (dir) => listOptional(onHost(dir)),
    PACKAGE_UNIT,
  );
  const { flags: given, args } = readCommandLine(service.argv.slice(1));
  const flags = new Map(given);
  const start = { argv: service.argv, flags };
  const exits = (problem: string): KubeletStartConfig => ({ ...start, staticPodPath: '', problem });
  if (service.problem) return exits(service.problem);
  if (args.length > 0) return exits(`unknown command ${args[0]}`);
  const configPath = flags.get('config') ?? '';
  const text = configPath ? readOptional(onHost(configPath)) : undefined;
  let config: KubeletConfiguration = {};
  if (text !== undefined) {
    const parsed = parseConfig(text);
    if (typeof parsed === 'string') {
      return exits(`failed to load kubelet config file, path: ${configPath}, error: ${parsed}`);
    }
    config = parsed;
  }
  // Before 1.28 --config-dir is an unknown flag, which the kubelet's flag parsing reports (binary-start.ts).
  const dropInDir = flags.get('config-dir') ?? '';
  if (dropInDir !== '' && minor >= DROP_IN_FIRST_MINOR) {
    if (minor < DROP_IN_BETA_MINOR && !service.environment.has(DROP_IN_ALPHA_VARIABLE)) {
      return exits(
        `flag ${dropInDir} specified but environment variable ${DROP_IN_ALPHA_VARIABLE} not set, cannot start kubelet`,
      );
    }
    const merged = mergeDropIns(dropInDir, config, onHost);
    if (typeof merged === 'string') return exits(merged);
    config = merged;
  }
  const gates = readCommandLine([
    `--feature-gates=${configGates(config)}`,
    `--feature-gates=${flags.get('feature-gates') ?? ''}`,
  ]).flags.get('feature-gates');
  if (gates) flags.set('feature-gates', gates);
  const pluginProblem = pluginStartProblem(flags, {
    read: (file) => readOptional(onHost(file)),
    exists: (file) => existsSync(onHost(file)),
  });
  // The deprecated --pod-manifest-path flag wins over the config, as kubelet flags do; with no config at
  // all, kubeadm's directory.
  const fromConfig =
    typeof config.staticPodPath === 'string'
      ? config.staticPodPath
      : text === undefined
        ? '/etc/kubernetes/manifests'
        : '';
  return {
    ...start,
    staticPodPath: flags.get('pod-manifest-path') ?? fromConfig,
    ...(pluginProblem ? { pluginProblem } : {}),
  };
}

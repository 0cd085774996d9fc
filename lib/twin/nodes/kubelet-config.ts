/**
 * What a kubelet starts with, read from its node's files as systemd and the kubelet read them: the
 * command line of kubelet.service with its drop-ins and environment files (systemd-unit.ts; kubeadm's
 * drop-in runs `kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS
 * $KUBELET_EXTRA_ARGS`, but a host may have any other), its flags read as pflag reads them, then the
 * KubeletConfiguration file named by --config, whose featureGates the flags override gate by gate.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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

/** The config's featureGates as `A=true,B=false`. */
function configGates(config: KubeletConfiguration): string {
  const gates = config.featureGates;
  if (!gates || typeof gates !== 'object') return '';
  return Object.entries(gates as Record<string, unknown>)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(',');
}

/**
 * Read a node's kubelet command line, flags and static pod directory. A missing config file means kubeadm's
 * staticPodPath (/etc/kubernetes/manifests).
 */
export function readKubeletStartConfig(stateDir: string, node: string): KubeletStartConfig {
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
  if (service.problem) return { ...start, staticPodPath: '', problem: service.problem };
  if (args.length > 0) return { ...start, staticPodPath: '', problem: `unknown command ${args[0]}` };
  const configPath = flags.get('config') ?? '';
  const text = configPath ? readOptional(onHost(configPath)) : undefined;
  // The deprecated --pod-manifest-path flag wins over the config file, as kubelet flags do.
  const flagPath = flags.get('pod-manifest-path');
  const plugins = (): { pluginProblem?: string } => {
    const problem = pluginStartProblem(flags, {
      read: (file) => readOptional(onHost(file)),
      exists: (file) => existsSync(onHost(file)),
    });
    return problem ? { pluginProblem: problem } : {};
  };
  if (text === undefined) {
    return { ...start, staticPodPath: flagPath ?? '/etc/kubernetes/manifests', ...plugins() };
  }
  const config = parseConfig(text);
  if (typeof config === 'string') {
    return {
      ...start,
      staticPodPath: '',
      problem: `failed to load kubelet config file, path: ${configPath}, error: ${config}`,
    };
  }
  const gates = readCommandLine([
    `--feature-gates=${configGates(config)}`,
    `--feature-gates=${flags.get('feature-gates') ?? ''}`,
  ]).flags.get('feature-gates');
  if (gates) flags.set('feature-gates', gates);
  const fromConfig = typeof config.staticPodPath === 'string' ? config.staticPodPath : '';
  return { ...start, staticPodPath: flagPath ?? fromConfig, ...plugins() };
}

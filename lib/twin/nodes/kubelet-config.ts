/**
 * What a kubelet starts with, read from its node's files the way systemd and the kubeadm drop-in
 * (/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf) assemble it:
 *
 *   ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
 *
 * with the flags of KUBELET_FLAG_SOURCES (KUBELET_KUBEADM_ARGS from /var/lib/kubelet/kubeadm-flags.env,
 * KUBELET_EXTRA_ARGS from /etc/default/kubelet, …; later flags win, as in pflag), the list the node agent
 * edits, then the KubeletConfiguration file named by --config.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { parseFlags, readEnvArgs, splitArgs } from '../../controlplane/flags.ts';
import { KUBELET_FLAG_SOURCES } from '../../controlplane/kubelet-sources.ts';
import { hostPath } from '../context.ts';

/**
 * What the kubeadm drop-in itself sets in KUBELET_KUBECONFIG_ARGS and KUBELET_CONFIG_ARGS (the drop-in of the
 * kubeadm package, as in assets/twins/hosts/kubeadm-v1.26-aws/usr/lib/systemd/system/kubelet.service.d/).
 */
const DROP_IN_ARGS =
  '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml';

export interface KubeletStartConfig {
  /** Every flag the kubelet runs with, by name. */
  readonly flags: ReadonlyMap<string, string>;
  /** Absolute host path of the static pod directory; '' when the kubelet runs no static pods. */
  readonly staticPodPath: string;
  /** Why the kubelet exits at start, when it does (the error it logs). */
  readonly problem?: string;
}

/** Parsed config files by content: thousands of nodes share one KubeletConfiguration text. */
const configCache = new Map<string, { staticPodPath?: unknown } | string>();

function readOptional(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The KubeletConfiguration of a config file's text, or the error the kubelet reports for it. */
function parseConfig(text: string): { staticPodPath?: unknown } | string {
  const cached = configCache.get(text);
  if (cached !== undefined) return cached;
  let parsed: { staticPodPath?: unknown } | string;
  try {
    const doc: unknown = parseYaml(text);
    parsed =
      doc && typeof doc === 'object' && (doc as { kind?: unknown }).kind === 'KubeletConfiguration'
        ? (doc as { staticPodPath?: unknown })
        : 'the file is not a KubeletConfiguration';
  } catch (err) {
    parsed = String((err as Error).message).split('\n')[0] ?? 'invalid YAML';
  }
  if (configCache.size > 1000) configCache.clear();
  configCache.set(text, parsed);
  return parsed;
}

/**
 * Read a node's kubelet flags and static pod directory. A spec may leave out the kubelet's files: a missing
 * flags file adds nothing and a missing config file means kubeadm's staticPodPath (/etc/kubernetes/manifests).
 */
export function readKubeletStartConfig(stateDir: string, node: string): KubeletStartConfig {
  const envArgs = (file: string, name: string): string[] =>
    readEnvArgs(readOptional(hostPath(stateDir, node, file)) ?? '', name);
  const flags = parseFlags([
    ...splitArgs(DROP_IN_ARGS),
    ...KUBELET_FLAG_SOURCES.flatMap((s) => envArgs(s.path, s.variable)),
  ]);
  const configPath = flags.get('config') ?? '';
  const text = configPath ? readOptional(hostPath(stateDir, node, configPath)) : undefined;
  // The deprecated --pod-manifest-path flag wins over the config file, as kubelet flags do.
  const flagPath = flags.get('pod-manifest-path');
  if (text === undefined) return { flags, staticPodPath: flagPath ?? '/etc/kubernetes/manifests' };
  const config = parseConfig(text);
  if (typeof config === 'string') {
    return {
      flags,
      staticPodPath: '',
      problem: `failed to load kubelet config file, path: ${configPath}, error: ${config}`,
    };
  }
  const fromConfig = typeof config.staticPodPath === 'string' ? config.staticPodPath : '';
  return { flags, staticPodPath: flagPath ?? fromConfig };
}

/**
 * Preflight's view of image pulls across the flip (providers/image-credentials.ts has the rules): which
 * kubelets pull with in-tree credentials that the flip turns off, which of them have the cloud's credential
 * plugin (the flip configures it), and whether the cluster pulls from the cloud's registry at all, read from
 * the images each kubelet reports on its Node (status.images). A kubelet that would lose credentials the
 * cluster's images need, with no plugin to take over, is refused before any change.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { AgentResult } from '../agent/protocol.ts';
import { kubernetesMinor } from '../controlplane/cloud-flag-rules.ts';
import { setFeatureGates } from '../controlplane/flags.ts';
import { PreflightFailedError } from '../errors.ts';
import type { ProviderId } from '../providers/catalog.ts';
import {
  credentialPluginOf,
  imagesOf,
  inTreeCredentials,
  PLUGIN_CONFIG_FLAG,
  PLUGIN_DIRS,
} from '../providers/image-credentials.ts';
import { nodeName } from './cluster.ts';
import { TO_EXTERNAL_KUBELET } from './edits.ts';

export interface ImageCredentialsPlan {
  /** The cloud's credential plugin; absent for a provider whose kubelet had no in-tree credentials. */
  readonly plugin?: string;
  /** Kubelets the flip moves from in-tree credentials to the plugin. */
  readonly configured: readonly string[];
  /** Kubelets that lose in-tree credentials with no plugin installed (nothing in the cluster needs them). */
  readonly lost: readonly string[];
  /** Kubelets whose in-tree credentials outlive the flip (the gate stays off at this minor), no plugin. */
  readonly kept: readonly string[];
  /** Images the nodes have pulled from the plugin's registry. */
  readonly images: readonly string[];
}

type Reports = Readonly<Record<string, AgentResult['imageCredentials']>>;

function listOf(names: readonly string[], max = 5): string {
  return names.length <= max
    ? names.join(', ')
    : `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}

/** The kubelet's flags as the flip leaves them, as far as credentials go: its in-tree gates removed. */
function afterFlip(flags: ReadonlyMap<string, string>): Map<string, string> {
  const after = new Map(flags);
  const gates = setFeatureGates(flags.get('feature-gates') ?? '', TO_EXTERNAL_KUBELET.featureGates);
  if (gates === '') after.delete('feature-gates');
  else after.set('feature-gates', gates);
  return after;
}

/** The images the nodes report having pulled (status.images). */
function pulledImages(nodes: readonly V1Node[]): string[] {
  return nodes.flatMap((n) => (n.status?.images ?? []).flatMap((i) => i.names ?? []));
}

/**
 * What happens to each kubelet's image credentials; throws PreflightFailedError when a kubelet would lose
 * credentials the cluster's images need and has no plugin to take over.
 */
export function planImageCredentials(
  provider: ProviderId,
  kubernetesVersion: string,
  nodes: readonly V1Node[],
  reports: Reports,
): ImageCredentialsPlan {
  const plugin = credentialPluginOf(provider);
  const none = { configured: [], lost: [], kept: [], images: [] };
  if (!plugin) return none;
  const minor = kubernetesMinor(kubernetesVersion);
  const configured: string[] = [];
  const lost: string[] = [];
  const kept: string[] = [];
  for (const node of nodes.map(nodeName)) {
    const report = reports[node];
    if (!report) continue;
    const flags = new Map(Object.entries(report.flags));
    if (flags.has(PLUGIN_CONFIG_FLAG) || !inTreeCredentials(provider, minor, flags)) continue;
    if (report.plugins[plugin.name]) configured.push(node);
    else if (inTreeCredentials(provider, minor, afterFlip(flags))) kept.push(node);
    else lost.push(node);
  }
  const images = imagesOf(plugin, pulledImages(nodes));
  if (lost.length > 0 && images.length > 0) {
    throw new PreflightFailedError(
      `the cluster pulls ${listOf(images, 3)} from ${plugin.registry} with the kubelet's in-tree credentials, ` +
        `which the flip turns off (DisableKubeletCloudCredentialProviders is on by default from 1.29), and ` +
        `${plugin.name} is not installed on ${listOf(lost)} (looked in ${PLUGIN_DIRS.join(', ')}). ` +
        `Install ${plugin.name} in one of those directories on each (the flip then points the kubelet at it), ` +
        'or give those kubelets an --image-credential-provider-config of your own, and run again',
    );
  }
  return { plugin: plugin.name, configured, lost, kept, images };
}

/** Whether a kubelet without the plugin must be refused at its flip (the cluster's images need it). */
export function pluginRequired(plan: ImageCredentialsPlan): boolean {
  return plan.images.length > 0;
}

/** What the flip does to image credentials, in words (progress output, plan); undefined when nothing. */
export function credentialsNote(plan: ImageCredentialsPlan, kubernetesVersion: string): string | undefined {
  const notes: string[] = [];
  if (plan.configured.length > 0) {
    notes.push(`${plan.configured.length} kubelet(s) move their image credentials to ${plan.plugin}`);
  }
  if (plan.lost.length > 0) {
    notes.push(
      `${plan.lost.length} kubelet(s) lose their in-tree image credentials and have no ${plan.plugin} (${listOf(plan.lost)}); no node has pulled an image that needs them`,
    );
  }
  if (plan.kept.length > 0) {
    notes.push(
      `${plan.kept.length} kubelet(s) keep their in-tree image credentials on ${kubernetesVersion} but lose them with the next minor that drops them: install ${plan.plugin} before upgrading Kubernetes (${listOf(plan.kept)})`,
    );
  }
  return notes.length > 0 ? notes.join('; ') : undefined;
}

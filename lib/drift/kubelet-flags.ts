/**
 * What a node's kubelet runs as far as the cloud goes, from its flag files as the node agent reports them:
 * the drift check's kubelet finding and the remediation's choice of nodes read it the same way. Pure.
 */
import type { FileReport } from '../agent/protocol.ts';
import type { DesiredMode } from './findings.ts';

export interface KubeletCloudFlags {
  /** The --cloud-provider the kubelet gets: the last flag source that gives one (kubeadm's drop-in order). */
  readonly provider: string | undefined;
  /** Whether any source gives it a --cloud-config. */
  readonly cloudConfig: boolean;
}

export function kubeletCloudFlags(files: readonly Pick<FileReport, 'kind' | 'flags'>[]): KubeletCloudFlags {
  const sources = files.filter((f) => f.kind === 'kubelet-env');
  return {
    provider: sources
      .map((f) => f.flags?.['cloud-provider'])
      .filter((v) => v !== undefined)
      .at(-1),
    cloudConfig: sources.some((f) => f.flags?.['cloud-config'] !== undefined),
  };
}

/** The kubelet's --cloud-provider the desired mode wants: external, or the provider's in-tree name. */
export function wantedKubeletProvider(expect: DesiredMode, inTree: string | undefined): string | undefined {
  return expect === 'external' ? 'external' : inTree;
}

/** Whether the kubelet runs as the desired mode wants (external: also without a --cloud-config). */
export function kubeletAsDesired(
  flags: KubeletCloudFlags,
  expect: DesiredMode,
  inTree: string | undefined,
): boolean {
  return (
    flags.provider === wantedKubeletProvider(expect, inTree) && (expect === 'in-tree' || !flags.cloudConfig)
  );
}

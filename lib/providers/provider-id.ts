/**
 * Which cloud a cluster runs on, from what the cluster itself says: its nodes' `spec.providerID` and the
 * `--cloud-provider` flags of its kube-apiserver, kube-controller-manager and kubelets.
 */
import { PreflightFailedError } from '../errors.ts';
import {
  knownFacts,
  PROVIDERS,
  type ProviderId,
  type ProviderInstance,
  providerForInTreeName,
  providerIdentity,
} from './catalog.ts';

export interface ParsedProviderID extends ProviderInstance {
  readonly provider: ProviderId;
}

/** The provider a providerID's scheme names (`aws://…` → aws), whether or not ccm-migrate supports it. */
export function providerOfProviderID(providerID: string): ProviderId | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//.exec(providerID)?.[1];
  return PROVIDERS.find((p) => providerIdentity(p).providerIdScheme === scheme);
}

/**
 * The instance a providerID names; undefined for anything
 * else (an empty string, another cloud, a malformed id).
 */
export function parseProviderID(providerID: string): ParsedProviderID | undefined {
  const provider = providerOfProviderID(providerID);
  const instance = provider && knownFacts(provider).parseProviderID(providerID);
  return provider && instance ? { provider, ...instance } : undefined;
}

export interface DetectedProvider {
  readonly provider: ProviderId;
  /** What says so, for the run's report (providerIDs and flag values only). */
  readonly evidence: string[];
}

function count<K>(keys: Iterable<K>): Map<K, number> {
  const counts = new Map<K, number>();
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  return counts;
}

/**
 * The provider that node providerIDs and in-tree `--cloud-provider` values (one per component that sets
 * it; `external` and empty are ignored) agree on; undefined when nothing names one. Two providers is
 * PreflightFailedError naming both: migrating such a cluster with one CCM would break the other's nodes.
 */
export function detectProvider(input: {
  readonly providerIDs: readonly string[];
  readonly cloudProviderFlags: readonly string[];
}): DetectedProvider | undefined {
  const evidence = new Map<ProviderId, string[]>();
  const add = (p: ProviderId, what: string) => evidence.set(p, [...(evidence.get(p) ?? []), what]);

  const firstID = new Map<ProviderId, string>();
  const ids = input.providerIDs.flatMap((id) => {
    const p = providerOfProviderID(id);
    if (p && !firstID.has(p)) firstID.set(p, id);
    return p ? [p] : [];
  });
  for (const [p, n] of count(ids)) add(p, `${n} node providerID${n === 1 ? '' : 's'} like ${firstID.get(p)}`);

  const flags = input.cloudProviderFlags.flatMap((value) => {
    const p = providerForInTreeName(value);
    return p ? [p] : [];
  });
  for (const [p, n] of count(flags)) {
    add(p, `--cloud-provider=${providerIdentity(p).inTreeName} on ${n} component${n === 1 ? '' : 's'}`);
  }

  const found = [...evidence];
  if (found.length > 1) {
    throw new PreflightFailedError(
      `the cluster shows more than one provider: ${found.map(([p, e]) => `${p} (${e.join('; ')})`).join(' and ')}`,
    );
  }
  const [only] = found;
  return only && { provider: only[0], evidence: only[1] };
}

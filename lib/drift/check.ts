/**
 * One cluster's drift check: observe (read-only), compare with the desired mode, report. Failing to
 * observe (unreachable, throttled, refused) is an `unknown` report, never clean or drifted.
 */
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { kubernetesMinor } from '../controlplane/cloud-flag-rules.ts';
import { parseFlags } from '../controlplane/flags.ts';
import { clusterConfigurationArgs } from '../controlplane/kubeadm-config.ts';
import { CcmMigrateError } from '../errors.ts';
import { type ProviderFacts, providerFacts } from '../providers/catalog.ts';
import { isStagedCcm } from '../providers/render.ts';
import { commandLine, componentOf, hasUninitializedTaint, isPodReady } from '../steps/cluster.ts';
import type { ExamineContext } from '../steps/preflight.ts';
import type { DesiredMode, DriftReport, Finding } from './findings.ts';
import { kubeletAsDesired, kubeletCloudFlags, wantedKubeletProvider } from './kubelet-flags.ts';
import { type ClusterObservation, observeCluster } from './observe.ts';
import { storageFindings } from './storage.ts';

export interface DriftOptions {
  readonly clusterId: string;
  readonly provider: string;
  readonly expect: DesiredMode;
  readonly deep: boolean;
  /** A node tainted uninitialized (or without providerID) for longer than this is stuck. @default 5 min */
  readonly stuckAfterMs?: number;
  readonly now?: () => number;
  /**
   * Throw a retryable failure (throttled, unreachable) instead of reporting unknown: in a workflow the
   * state machine's Retry waits and tries again, and its Catch reports unknown once retries are spent.
   */
  readonly throwRetryable?: boolean;
}

const STUCK_AFTER_MS = 5 * 60_000;

function describePod(pod: V1Pod): string {
  return `Pod ${pod.metadata?.namespace}/${pod.metadata?.name}`;
}

function flagsText(flags: ReadonlyMap<string, string>): string {
  const shown = ['cloud-provider', 'cloud-config']
    .filter((f) => flags.has(f))
    .map((f) => `--${f}=${flags.get(f)}`);
  return shown.join(' ') || 'no cloud flags';
}

function controlPlaneFindings(
  o: ClusterObservation,
  expect: DesiredMode,
  inTree: string | undefined,
): Finding[] {
  return o.controlPlanePods.flatMap((pod): Finding[] => {
    const component = componentOf(pod);
    if (component !== 'kube-apiserver' && component !== 'kube-controller-manager') return [];
    const flags = parseFlags(commandLine(pod));
    const provider = flags.get('cloud-provider');
    let expected: string;
    let ok: boolean;
    if (expect === 'external') {
      expected =
        component === 'kube-apiserver'
          ? 'no --cloud-provider, no --cloud-config'
          : '--cloud-provider=external, no --cloud-config';
      ok =
        !flags.has('cloud-config') &&
        (component === 'kube-apiserver'
          ? provider === undefined || provider === 'external'
          : provider === 'external');
    } else {
      expected = `--cloud-provider=${inTree}`;
      ok = component === 'kube-apiserver' || provider === inTree;
    }
    return ok
      ? []
      : [
          {
            kind: 'control-plane-flags',
            object: describePod(pod),
            expected,
            seen: flagsText(flags),
            severity: 'critical',
          },
        ];
  });
}

/** The CCM's workload as observed, whichever kind runs it: whether it asks for pods, in words. */
interface ObservedCcm {
  readonly object: string;
  readonly running: boolean;
  readonly seen: string;
  readonly pod: V1PodSpec | undefined;
}

/** The observed CCM workloads, a running one first (a Deployment, or a DaemonSet not staged). */
function observedCcms(o: ClusterObservation, facts: ProviderFacts): ObservedCcm[] {
  const name = `${facts.namespace}/${facts.deploymentName}`;
  const found: ObservedCcm[] = [];
  if (o.ccmDeployment) {
    const replicas = o.ccmDeployment.spec?.replicas ?? 1;
    found.push({
      object: `Deployment ${name}`,
      running: !isStagedCcm('Deployment', { replicas }),
      seen: `${replicas} replica(s)`,
      pod: o.ccmDeployment.spec?.template.spec,
    });
  }
  if (o.ccmDaemonSet) {
    const staged = isStagedCcm('DaemonSet', o.ccmDaemonSet.spec);
    found.push({
      object: `DaemonSet ${name}`,
      running: !staged,
      seen: staged ? 'staged on no node' : `${o.ccmDaemonSet.status?.desiredNumberScheduled ?? 0} node(s)`,
      pod: o.ccmDaemonSet.spec?.template.spec,
    });
  }
  return found.sort((a, b) => Number(b.running) - Number(a.running));
}

function ccmFindings(o: ClusterObservation, facts: ProviderFacts, expect: DesiredMode): Finding[] {
  const ccms = observedCcms(o, facts);
  if (expect === 'in-tree') {
    return ccms
      .filter((c) => c.running)
      .map((c) => ({
        kind: 'ccm-present' as const,
        object: c.object,
        expected: 'no CCM beside the in-tree controllers',
        seen: c.seen,
        severity: 'critical' as const,
      }));
  }
  const d = ccms[0];
  if (!d) {
    const object = `Deployment ${facts.namespace}/${facts.deploymentName}`;
    return [
      { kind: 'ccm-missing', object, expected: 'the CCM deployed', seen: 'not found', severity: 'critical' },
    ];
  }
  const object = d.object;
  const ready = o.ccmPods.filter(isPodReady);
  if (!d.running || ready.length === 0) {
    return [
      {
        kind: 'ccm-not-ready',
        object,
        expected: 'at least one Ready CCM pod',
        seen: `${d.seen}, ${ready.length} Ready`,
        severity: 'critical',
      },
    ];
  }
  const findings: Finding[] = [];
  const lease = o.ccmLease?.spec;
  const holder = lease?.holderIdentity ?? '';
  // One look cannot see a renewal: the Lease must have been renewed within its duration (and a minute of
  // clock skew). Which pod holds it is not read from the identity, whose hostname need not be a Node's.
  const renewedAgo = Date.now() - Date.parse(String(lease?.renewTime ?? ''));
  const fresh = renewedAgo <= ((lease?.leaseDurationSeconds ?? 15) + 60) * 1000;
  if (!holder || !fresh) {
    findings.push({
      kind: 'ccm-not-leading',
      object: `Lease ${facts.namespace}/${facts.leaseName}`,
      expected: 'held and renewed while a CCM pod is Ready',
      seen: holder ? `held by ${holder}, last renewed ${Math.round(renewedAgo / 1000)} s ago` : 'no holder',
      severity: 'critical',
    });
  }
  const image = d.pod?.containers.find((c) => c.name === facts.containerName)?.image ?? '';
  const tag = /:v?1\.(\d+)\./.exec(image);
  const clusterMinor = kubernetesMinor(o.kubernetesVersion);
  if (tag && (Number(tag[1]) > clusterMinor || Number(tag[1]) < clusterMinor - 1)) {
    findings.push({
      kind: 'ccm-image-skew',
      object,
      expected: `a CCM for 1.${clusterMinor} (or 1.${clusterMinor - 1})`,
      seen: image,
      severity: 'warning',
    });
  }
  return findings;
}

function nodeFindings(o: ClusterObservation, now: number, stuckAfterMs: number): Finding[] {
  return o.nodes.flatMap((node): Finding[] => {
    const age = now - new Date(node.metadata?.creationTimestamp ?? now).getTime();
    if (age < stuckAfterMs) return []; // a new node may still be waiting for its cloud controller
    const object = `Node ${node.metadata?.name}`;
    if (hasUninitializedTaint(node)) {
      return [
        {
          kind: 'node-stuck-uninitialized',
          object,
          expected: 'initialised by a cloud controller',
          seen: `tainted for ${Math.round(age / 1000)} s`,
          severity: 'critical',
        },
      ];
    }
    if (!node.spec?.providerID) {
      return [
        {
          kind: 'node-without-provider-id',
          object,
          expected: 'a providerID',
          seen: 'none',
          severity: 'critical',
        },
      ];
    }
    return [];
  });
}

function kubeadmFindings(o: ClusterObservation, expect: DesiredMode, inTree: string | undefined): Finding[] {
  if (o.clusterConfiguration === undefined) return [];
  const kcm = clusterConfigurationArgs(o.clusterConfiguration, 'controllerManager');
  const kas = clusterConfigurationArgs(o.clusterConfiguration, 'apiServer');
  const ok =
    expect === 'external'
      ? kcm.get('cloud-provider') === 'external' &&
        !kcm.has('cloud-config') &&
        !kas.has('cloud-config') &&
        (kas.get('cloud-provider') ?? 'external') === 'external'
      : kcm.get('cloud-provider') === inTree;
  return ok
    ? []
    : [
        {
          kind: 'kubeadm-config-flags',
          object: 'ConfigMap kube-system/kubeadm-config',
          expected:
            expect === 'external'
              ? 'controllerManager --cloud-provider=external, no in-tree flags (or `kubeadm upgrade` puts them back)'
              : `controllerManager --cloud-provider=${inTree}`,
          seen: `controllerManager ${flagsText(kcm)}; apiServer ${flagsText(kas)}`,
          severity: 'warning',
        },
      ];
}

function kubeletFindings(o: ClusterObservation, expect: DesiredMode, inTree: string | undefined): Finding[] {
  return Object.entries(o.kubeletFiles ?? {}).flatMap(([node, files]): Finding[] => {
    const flags = kubeletCloudFlags(files);
    if (kubeletAsDesired(flags, expect, inTree)) return [];
    return [
      {
        kind: 'kubelet-flags',
        object: `Node ${node} kubelet`,
        expected: `--cloud-provider=${wantedKubeletProvider(expect, inTree)}${expect === 'external' ? ', no --cloud-config' : ''}`,
        seen: `--cloud-provider=${flags.provider ?? '(none)'}${flags.cloudConfig ? ' with --cloud-config' : ''}`,
        severity: 'critical',
      },
    ];
  });
}

function leftoverFindings(o: ClusterObservation, now: number, stuckAfterMs: number): Finding[] {
  return o.agentJobs
    .filter((j) => !j.metadata?.deletionTimestamp) // being deleted: not left behind
    .filter((j) => now - new Date(j.metadata?.creationTimestamp ?? now).getTime() > stuckAfterMs)
    .map((j) => ({
      kind: 'leftover-agent-job' as const,
      object: `Job ${j.metadata?.namespace}/${j.metadata?.name}`,
      expected: 'agent Jobs deleted once read',
      seen: `created ${j.metadata?.creationTimestamp}`,
      severity: 'info' as const,
    }));
}

/** Every way the observed cluster differs from the desired mode. Pure. */
export function findDrift(
  o: ClusterObservation,
  facts: ProviderFacts,
  expect: DesiredMode,
  now: number,
  stuckAfterMs = STUCK_AFTER_MS,
): Finding[] {
  return [
    ...controlPlaneFindings(o, expect, facts.inTreeName),
    ...kubeletFindings(o, expect, facts.inTreeName),
    ...ccmFindings(o, facts, expect),
    ...nodeFindings(o, now, stuckAfterMs),
    ...kubeadmFindings(o, expect, facts.inTreeName),
    ...leftoverFindings(o, now, stuckAfterMs),
    ...storageFindings(o.storage, o.pendingClaimClasses),
  ];
}

export async function checkDrift(ctx: ExamineContext, opts: DriftOptions): Promise<DriftReport> {
  const now = opts.now ?? Date.now;
  const before = ctx.clients.requests();
  const base = {
    clusterId: opts.clusterId,
    expect: opts.expect,
    depth: opts.deep ? ('deep' as const) : ('shallow' as const),
  };
  try {
    const facts = providerFacts(opts.provider);
    const runId = `drift-${now().toString(36)}`;
    const observation = await observeCluster(ctx, facts, { deep: opts.deep, runId });
    const findings = findDrift(observation, facts, opts.expect, now(), opts.stuckAfterMs);
    return {
      ...base,
      status: findings.length > 0 ? 'drifted' : 'clean',
      findings,
      checkedAt: new Date(now()).toISOString(),
      apiRequests: ctx.clients.requests() - before,
      storage: observation.storage,
    };
  } catch (err) {
    if (!(err instanceof CcmMigrateError) || (opts.throwRetryable && err.retryable)) throw err;
    return {
      ...base,
      status: 'unknown',
      findings: [],
      checkedAt: new Date(now()).toISOString(),
      apiRequests: ctx.clients.requests() - before,
      error: `${err.name}: ${err.message}`,
    };
  }
}

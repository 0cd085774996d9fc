/**
 * Leader election of the controller managers through coordination.k8s.io/v1 Leases in kube-system, as
 * client-go's leaderelection package runs it (tools/leaderelection/leaderelection.go, tryAcquireOrRenew):
 * - each process has the identity `<host>_<uuid>`, new at every start;
 * - a leader renews every retry period; a lease whose holder stopped renewing is taken only once it
 *   expired (`leaseDuration` after its last renewal), and a taker bumps `leaseTransitions`;
 * - neither kube-controller-manager nor cloud-controller-manager sets ReleaseOnCancel (cmd/kube-controller-
 *   manager/app/controllermanager.go and k8s.io/cloud-provider/app/controllermanager.go, leaderElectAndRun),
 *   so a restarted or deleted leader leaves its lease to expire: that gap is real and the twin keeps it;
 * - with `--enable-leader-migration` a process takes the migration lease
 *   (`cloud-provider-extraction-migration`, k8s.io/controller-manager leadermigration default config) after
 *   its main lease, and runs the cloud controllers under it. It contends whatever its provider: a
 *   kube-controller-manager with `--cloud-provider=external` and the flag still takes the lease (the
 *   migration lock is started for any LeaderMigrator, cmd/kube-controller-manager/app/controllermanager.go)
 *   and runs nothing under it, which is why upstream says such a KCM "MUST NOT have Leader Migration
 *   enabled"; the twin keeps that hazard.
 * Every KCM contends for the `kube-controller-manager` lease, with or without a cloud provider: only the
 * holder runs controllers, so a leading KCM without an in-tree provider means no KCM runs cloud loops.
 */
import { randomUUID } from 'node:crypto';
import type { ClusterStore, KubeObject } from '../store.ts';
import type { ControllerCandidate, ControllerKind } from './candidates.ts';

export const LEASES = 'leases.coordination.k8s.io';
export const LEASE_NAMESPACE = 'kube-system';
export const MIGRATION_LEASE = 'cloud-provider-extraction-migration';

/** The default `--leader-elect-resource-name` of each binary is its own name. */
function mainLease(kind: ControllerKind): string {
  return kind;
}

/** Main leases first: a process tries the migration lease only once it holds its main one. */
const ALL_LEASES = ['kube-controller-manager', 'cloud-controller-manager', MIGRATION_LEASE] as const;

/** A running controller process: its flags and its leader election identity. */
export interface Participant extends ControllerCandidate {
  readonly identity: string;
  /** When this process started (became Ready); the longest-running contender takes a free lease. */
  readonly since: number;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

/** metav1.MicroTime as the API serialises it (RFC 3339 with microseconds). */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface ElectionTimings {
  readonly leaseMs: number;
  /** A leader that could not renew for this long gives up (and its process exits). */
  readonly renewDeadlineMs: number;
}

/**
 * The component-base defaults are 15 s lease, 10 s renew deadline, 2 s retry period; the twin keeps
 * those ratios to its configured lease duration.
 */
export function electionTimings(leaseMs: number): ElectionTimings & { readonly retryMs: number } {
  return { leaseMs, renewDeadlineMs: (leaseMs * 2) / 3, retryMs: Math.max(1, (leaseMs * 2) / 15) };
}

export class LeaderElection {
  readonly #store: ClusterStore;
  readonly #timings: ElectionTimings;
  readonly #participants = new Map<string, Participant>();
  /** Last time each participant renewed what it holds (for the renew deadline while the API is down). */
  readonly #lastRenewal = new Map<string, number>();

  readonly #hostnameOf: (node: string) => string | undefined;

  /** `hostnameOf`: the hostname of a node's host, which a host-network process puts in its identity. */
  constructor(
    store: ClusterStore,
    timings: ElectionTimings,
    hostnameOf: (node: string) => string | undefined,
  ) {
    this.#store = store;
    this.#timings = timings;
    this.#hostnameOf = hostnameOf;
  }

  /** `<hostname>_<uuid>`, as client-go's leader election names a process (the host's name, not the Node's). */
  #identityOf(c: ControllerCandidate): string {
    return `${this.#hostnameOf(c.node) ?? (c.node || c.pod)}_${randomUUID()}`;
  }

  /**
   * Record what a controller pod is now (`undefined`: no longer a controller, or gone). A process that
   * (re)starts gets a fresh identity, as a new process does. Returns whether the pod is or was a controller.
   */
  observe(key: string, candidate: ControllerCandidate | undefined, now = Date.now()): boolean {
    const before = this.#participants.get(key);
    if (!candidate) {
      this.#participants.delete(key);
      this.#lastRenewal.delete(key);
      return before !== undefined;
    }
    const restarted = !before?.running || before.uid !== candidate.uid;
    if (restarted) {
      this.#participants.set(key, { ...candidate, identity: this.#identityOf(candidate), since: now });
      this.#lastRenewal.set(key, now);
    } else {
      this.#participants.set(key, { ...candidate, identity: before.identity, since: before.since });
    }
    return true;
  }

  /** One round of every participant's election loop: renew, wait, or acquire each lease. */
  reconcile(apiUp: boolean, now = Date.now()): void {
    if (!apiUp) {
      this.#giveUpAfterRenewDeadline(now);
      return;
    }
    for (const lease of ALL_LEASES) this.#electOne(lease, now);
  }

  /** The running processes that run the cloud loops now (lease holders, and those not electing). */
  cloudLoopRunners(): Participant[] {
    return this.#holding((p) => p.cloudLoops && (p.leaderMigration ? MIGRATION_LEASE : mainLease(p.kind)));
  }

  /**
   * The running processes that run their binary's own controllers now (node IPAM among them): each holds
   * its main lease, or does not elect.
   */
  leaders(): Participant[] {
    return this.#holding((p) => mainLease(p.kind));
  }

  /** The running participants that hold the lease `leaseOf` names for them (false: none counts). */
  #holding(leaseOf: (p: Participant) => string | false): Participant[] {
    const holders = new Map<string, string | undefined>();
    const holderOf = (lease: string): string | undefined => {
      if (!holders.has(lease)) holders.set(lease, this.holder(lease));
      return holders.get(lease);
    };
    return [...this.#participants.values()].filter((p) => {
      const lease = leaseOf(p);
      if (!p.running || lease === false) return false;
      return !p.leaderElect || holderOf(lease) === p.identity;
    });
  }

  holder(lease: string): string | undefined {
    const obj = this.#store.tryGet(LEASES, LEASE_NAMESPACE, lease);
    return (obj?.spec as LeaseSpec | undefined)?.holderIdentity || undefined;
  }

  #contends(p: Participant, lease: string): boolean {
    if (!p.running || !p.leaderElect) return false;
    if (lease === mainLease(p.kind)) return true;
    return lease === MIGRATION_LEASE && p.leaderMigration && this.holder(mainLease(p.kind)) === p.identity;
  }

  #electOne(name: string, now: number): void {
    const lease = this.#store.tryGet(LEASES, LEASE_NAMESPACE, name);
    const spec = (lease?.spec ?? {}) as LeaseSpec;
    const contenders = [...this.#participants.entries()].filter(([, p]) => this.#contends(p, name));
    const leader = contenders.find(([, p]) => p.identity === spec.holderIdentity);
    if (lease && leader) {
      this.#write(lease, { ...spec, renewTime: microTime(now) });
      this.#lastRenewal.set(leader[0], now);
      return;
    }
    // A record without a valid renewTime counts as expired.
    const renewed = Date.parse(spec.renewTime ?? '');
    if (spec.holderIdentity && renewed + this.#timings.leaseMs > now) return;
    const [next] = contenders.sort(([ka, a], [kb, b]) => a.since - b.since || ka.localeCompare(kb));
    if (!next) return;
    const [key, p] = next;
    const record: LeaseSpec = {
      holderIdentity: p.identity,
      leaseDurationSeconds: Math.max(1, Math.round(this.#timings.leaseMs / 1000)),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: lease ? (spec.leaseTransitions ?? 0) + 1 : 0,
    };
    if (lease) this.#write(lease, record);
    else {
      this.#store.create(LEASES, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace: LEASE_NAMESPACE },
        spec: record,
      });
    }
    this.#lastRenewal.set(key, now);
  }

  #write(lease: KubeObject, spec: LeaseSpec): void {
    this.#store.update(LEASES, { ...structuredClone(lease), spec });
  }

  /**
   * Without the API no one renews; a leader past its renew deadline stops leading and its process exits
   * ("leaderelection lost"), so it comes back as a new process with a new identity.
   */
  #giveUpAfterRenewDeadline(now: number): void {
    const held = new Set(ALL_LEASES.map((l) => this.holder(l)));
    for (const [key, p] of this.#participants) {
      if (!held.has(p.identity)) continue;
      if (now - (this.#lastRenewal.get(key) ?? now) <= this.#timings.renewDeadlineMs) continue;
      this.#participants.set(key, { ...p, identity: this.#identityOf(p), since: now });
      this.#lastRenewal.set(key, now);
    }
  }
}

/**
 * `ccm-migrate rehearse`: the migration run first on a twin of the cluster. Snapshot the real cluster
 * (read-only), ask its own preflight what it would refuse (plan, which changes nothing), start a twin from
 * the snapshot in this process, then plan, upgrade and downgrade the twin with the same local engine and
 * steps as `plan`, `upgrade` and `downgrade`, timing each step, and read the twin's invariant monitor.
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CcmMigrateError } from '../errors.ts';
import { clientsFromKubeconfigFile, type KubeClients } from '../kube/clients.ts';
import type { EventLog } from '../local/engine.ts';
import {
  type MigrationKind,
  type MigrationRunResult,
  newRunId,
  runDowngradeLocally,
  runUpgradeLocally,
} from '../local/migration.ts';
import { type FileChange, planUpgrade } from '../local/plan.ts';
import type { UpgradeOptions } from '../steps/schemas.ts';
import { LocalRunStore } from '../store/local-store.ts';
import type { Violation } from '../twin/invariants.ts';
import { type Latencies, parseTwinSpec, type TwinSpec } from '../twin/spec.ts';
import { startTwin } from '../twin/twin.ts';
import { readOnlyAgent } from './agent.ts';
import { type Snapshot, takeSnapshot } from './snapshot.ts';

/**
 * The latencies the rehearsal's twin runs with: the one place where the realistic latency profile (the
 * spec's `latencies` preset, being added) plugs in. Until then, the twin spec's defaults, unless the caller
 * gives its own (tests).
 */
export function rehearsalLatencies(given?: Partial<Latencies>): Partial<Latencies> {
  return given ?? {};
}

export interface RehearsalOptions {
  /** The real cluster: read only. */
  readonly clients: KubeClients;
  readonly clusterId: string;
  readonly options: UpgradeOptions;
  readonly maxUnavailable: number;
  readonly agentImage?: string;
  /** Serve the twin from a real kube-apiserver (`npm run setup:kube`). */
  readonly realApi?: boolean;
  /** The twin's node files and the rehearsal's run records; a new temp dir when absent. */
  readonly stateDir?: string;
  readonly latencies?: Partial<Latencies>;
  readonly onProgress?: (message: string) => void;
}

/** A refusal, by the error's name, as the run or preflight gave it. */
export interface Refusal {
  readonly name: string;
  readonly message: string;
}

export interface StepTime {
  readonly state: string;
  readonly ms: number;
}

export interface RehearsedRun {
  readonly kind: MigrationKind;
  readonly status: MigrationRunResult['status'];
  readonly durationMs: number;
  readonly steps: readonly StepTime[];
  readonly error?: Refusal;
}

export interface Rehearsal {
  readonly snapshot: Snapshot;
  readonly spec: TwinSpec;
  readonly stateDir: string;
  /** What preflight refuses on the real cluster (plan, read-only); empty when it would go ahead. */
  readonly realRefusals: readonly Refusal[];
  /** What plan on the twin said each node file would become (absent when the twin's plan refused). */
  readonly files?: readonly FileChange[];
  readonly runs: readonly RehearsedRun[];
  /** The twin's invariant violations over the whole rehearsal. */
  readonly violations: readonly Violation[];
}

/** A run's failure or a plan's refusal as a Refusal; anything else is not ours to judge and is thrown. */
function refusalOf(err: unknown): Refusal {
  if (err instanceof CcmMigrateError) return { name: err.name, message: err.message };
  throw err;
}

/** Time per top-level state: from its StateEntered to the next one (Map iterations inside their Map). */
function stepTimer(): { onEvent: (e: EventLog) => void; steps: (endedAt: number) => StepTime[] } {
  const entered: { state: string; at: number }[] = [];
  return {
    onEvent: (e) => {
      if (e.type === 'StateEntered' && !('index' in e && e.index !== undefined)) {
        entered.push({ state: e.state.name, at: Date.now() });
      }
    },
    steps: (endedAt) =>
      entered.map((s, i) => ({ state: s.state, ms: (entered[i + 1]?.at ?? endedAt) - s.at })),
  };
}

async function rehearseRun(
  kind: MigrationKind,
  twin: { clients: KubeClients; store: LocalRunStore },
  opts: RehearsalOptions,
): Promise<RehearsedRun> {
  const timer = stepTimer();
  const run = kind === 'upgrade' ? runUpgradeLocally : runDowngradeLocally;
  opts.onProgress?.(`${kind} on the twin …`);
  const result = await run({
    clients: twin.clients,
    store: twin.store,
    clusterId: opts.clusterId,
    maxUnavailable: opts.maxUnavailable,
    options: opts.options,
    onEvent: timer.onEvent,
  });
  return {
    kind,
    status: result.status,
    durationMs: result.durationMs,
    steps: timer.steps(Date.now()),
    ...(result.error ? { error: { name: result.error.name, message: result.error.cause } } : {}),
  };
}

export async function rehearse(opts: RehearsalOptions): Promise<Rehearsal> {
  const progress = opts.onProgress ?? (() => undefined);
  const agent = readOnlyAgent(opts.clients, opts.agentImage ? { agentImage: opts.agentImage } : {});
  const snapshot = await takeSnapshot({
    clients: opts.clients,
    agent,
    runId: newRunId('snap'),
    onProgress: progress,
  });
  progress('preflight on the real cluster (plan: read-only) …');
  const realRefusals = await planUpgrade({
    clients: opts.clients,
    options: opts.options,
    ...(opts.agentImage ? { agentImage: opts.agentImage } : {}),
  }).then(
    () => [],
    (err: unknown) => [refusalOf(err)],
  );
  const spec = parseTwinSpec(
    { ...snapshot.spec, latencies: rehearsalLatencies(opts.latencies) },
    'the snapshot',
  );
  const stateDir = opts.stateDir ?? (await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-rehearse-')));
  progress(`starting the twin in ${stateDir}${opts.realApi ? ' on a real kube-apiserver' : ''} …`);
  const twin = await startTwin({
    spec,
    stateDir: path.join(stateDir, 'twin'),
    realApi: opts.realApi ?? false,
  });
  try {
    const clients = clientsFromKubeconfigFile(twin.kubeconfigPath);
    const store = new LocalRunStore(path.join(stateDir, 'runs'));
    progress('plan on the twin …');
    const plan = await planUpgrade({ clients, options: opts.options }).catch((err: unknown) => {
      refusalOf(err);
      return undefined;
    });
    const runs: RehearsedRun[] = [await rehearseRun('upgrade', { clients, store }, opts)];
    if (runs[0]?.status === 'SUCCEEDED') runs.push(await rehearseRun('downgrade', { clients, store }, opts));
    await twin.monitor.stop();
    return {
      snapshot,
      spec,
      stateDir,
      realRefusals,
      ...(plan ? { files: plan.files } : {}),
      runs,
      violations: twin.monitor.violations(),
    };
  } finally {
    await twin.stop();
  }
}

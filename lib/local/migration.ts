/**
 * An upgrade or downgrade in local mode: the state machine's ASL, rendered as CDK deploys it, run
 * in-process with every Task calling its step directly against the cluster of a kubeconfig (a real one or a
 * twin's). A run cut anywhere is resumed by running again with the same cluster id: the unfinished run's
 * id is reused, every step is idempotent, and the snapshot of its first preflight is kept.
 */
import { randomBytes } from 'node:crypto';
import { downgradeDefinition } from '../../state-machines/downgrade.ts';
import { STEP_IDS, type StepId } from '../../state-machines/steps.ts';
import { upgradeDefinition } from '../../state-machines/upgrade.ts';
import { InvalidInputError } from '../errors.ts';
import type { StepContext } from '../steps/context.ts';
import { runStep } from '../steps/index.ts';
import { type UpgradeInput, UpgradeInputSchema } from '../steps/schemas.ts';
import { STEP_BUDGET_MS } from '../steps/time-budget.ts';
import { LocalRunStore } from '../store/local-store.ts';
import type { RunStore } from '../store/run-store.ts';
import { type Approver, approvalGateHandlers } from './approval.ts';
import { type LocalContextOptions, localContext } from './context.ts';
import { type EventLog, type LocalRunResult, runLocally, type StepHandler } from './engine.ts';
import { filesEntryOf, openHistory, progressEntryOf, stateEntryOf } from './history.ts';
import { type RenderedWorkflow, renderDefinition } from './render.ts';

export interface MigrationRunOptions extends LocalContextOptions {
  readonly store: RunStore;
  readonly clusterId: string;
  readonly maxUnavailable?: number;
  readonly options?: UpgradeInput['options'];
  /** Answers the approval gate (`options.requireApproval`); without it such a run ends unchanged. */
  readonly approve?: Approver;
  readonly onEvent?: (event: EventLog) => void;
  /** Retry pauses per state name in ms (tests); the definition's own intervals otherwise. */
  readonly retryIntervalOverrides?: Readonly<Record<string, number | number[]>>;
}

export interface MigrationRunResult extends LocalRunResult {
  readonly clusterId: string;
  readonly runId: string;
  /** Whether this run picked up an unfinished earlier one. */
  readonly resumed: boolean;
  readonly durationMs: number;
  readonly apiRequests: number;
}

/** `up-20261123-134501-a1b2`: sortable, unique, and a valid Kubernetes name. */
export function newRunId(kind: 'up' | 'down' | 'plan' | 'remediate' | 'snap', now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${kind}-${stamp}-${randomBytes(2).toString('hex')}`;
}

export type MigrationKind = 'upgrade' | 'downgrade';

const DEFINITIONS = { upgrade: upgradeDefinition, downgrade: downgradeDefinition } as const;
const rendered = new Map<MigrationKind, RenderedWorkflow>();

/** A workflow's ASL, rendered once per process (CDK construction takes a few hundred ms). */
export function migrationWorkflow(kind: MigrationKind): RenderedWorkflow {
  let workflow = rendered.get(kind);
  if (!workflow) {
    workflow = renderDefinition(DEFINITIONS[kind]);
    rendered.set(kind, workflow);
  }
  return workflow;
}

/** Each invocation of a step runs with a context of its own (`contextFor`): its own deadline, as in Lambda. */
export function stepHandlers(contextFor: (step: StepId) => StepContext): Record<StepId, StepHandler> {
  return Object.fromEntries(
    STEP_IDS.map((id) => [id, (event: unknown) => runStep(id, event, contextFor(id))]),
  ) as Record<StepId, StepHandler>;
}

export function runUpgradeLocally(opts: MigrationRunOptions): Promise<MigrationRunResult> {
  return runMigrationLocally('upgrade', opts);
}

export function runDowngradeLocally(opts: MigrationRunOptions): Promise<MigrationRunResult> {
  return runMigrationLocally('downgrade', opts);
}

async function runMigrationLocally(
  kind: MigrationKind,
  opts: MigrationRunOptions,
): Promise<MigrationRunResult> {
  const started = Date.now();
  const release = await opts.store.claimDriver?.(opts.clusterId);
  try {
    return await runClaimed(kind, opts, started);
  } finally {
    await release?.();
  }
}

async function runClaimed(
  kind: MigrationKind,
  opts: MigrationRunOptions,
  started: number,
): Promise<MigrationRunResult> {
  const unfinished = await opts.store.current(opts.clusterId);
  if (unfinished && unfinished.kind !== kind) {
    throw new InvalidInputError(
      `cluster ${opts.clusterId} has an unfinished ${unfinished.kind} run ${unfinished.runId}: finish it first`,
    );
  }
  const runId = unfinished?.runId ?? newRunId(kind === 'upgrade' ? 'up' : 'down');
  const input = UpgradeInputSchema.parse({
    clusterId: opts.clusterId,
    runId,
    maxUnavailable: opts.maxUnavailable ?? 1,
    options: opts.options ?? {},
  });
  const requestsBefore = opts.clients.requests();
  // The local store keeps the run's history beside its record: what `ccm-migrate report` draws.
  const history =
    opts.store instanceof LocalRunStore
      ? await openHistory(opts.store.historyFile(opts.clusterId, runId))
      : undefined;
  history?.record({ type: 'run-started', at: started, kind, maxUnavailable: input.maxUnavailable });
  const onEvent = (event: EventLog): void => {
    const entry = stateEntryOf(event);
    if (entry) history?.record(entry);
    opts.onEvent?.(event);
  };
  const context: MigrationRunOptions = {
    ...opts,
    stepBudgetMs: opts.stepBudgetMs ?? STEP_BUDGET_MS,
    onProgress: (progress) => {
      history?.record(progressEntryOf(progress));
      opts.onProgress?.(progress);
    },
    onAgentResult: (node, result) => {
      history?.record(filesEntryOf(node, result));
      opts.onAgentResult?.(node, result);
    },
  };
  try {
    const result = await runLocally({
      workflow: migrationWorkflow(kind),
      handlers: stepHandlers(() => ({ ...localContext(context), store: opts.store })),
      taskHandlers: approvalGateHandlers(opts.approve),
      input,
      onEvent,
      ...(opts.retryIntervalOverrides ? { retryIntervalOverrides: opts.retryIntervalOverrides } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    const apiRequests = opts.clients.requests() - requestsBefore;
    history?.record({
      type: 'run-ended',
      at: Date.now(),
      status: result.status,
      transitions: result.transitions,
      apiRequests,
      ...(result.error ? { error: result.error } : {}),
    });
    return {
      ...result,
      clusterId: opts.clusterId,
      runId,
      resumed: unfinished !== undefined,
      durationMs: Date.now() - started,
      apiRequests,
    };
  } finally {
    await history?.close();
  }
}

/**
 * `ccm-migrate upgrade|downgrade|status --aws`: the same commands against the deployed stack. A run is
 * started as the starter function starts one (the execution named after the request, so the same
 * --request-id again follows the same execution), followed through its history with the local mode's
 * progress lines, and ended with a summary and the local mode's exit codes. Nothing of a cluster's
 * kubeconfig passes through here: the functions read it from Secrets Manager.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import {
  DescribeExecutionCommand,
  type ExecutionStatus,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  ListExecutionsCommand,
  type SFNClient,
} from '@aws-sdk/client-sfn';
import type { StackTarget } from '../aws/stack-outputs.ts';
import { announceStarted, executionNameFor, startRun } from '../aws/starter.ts';
import { ERROR_NAMES } from '../errors.ts';
import type { EventLog } from '../local/engine.ts';
import type { MigrationKind } from '../local/migration.ts';
import type { UpgradeOptions } from '../steps/schemas.ts';
import { confirm } from './confirm.ts';
import { CliError, EXIT, exitCodeForError } from './exit-codes.ts';
import { joinSourcesAfter } from './join-sources.ts';
import { progressPrinter, renderSummary, verifiedNodes } from './migration.ts';

export interface AwsMigrationCommand {
  readonly kind: MigrationKind;
  readonly clusterId: string;
  readonly sfn: SFNClient;
  /** With target.eventBusName: MigrationStarted is announced as the starter does. */
  readonly events?: EventBridgeClient;
  readonly target: StackTarget;
  readonly maxUnavailable: number;
  readonly options: UpgradeOptions;
  /** The same request id again follows its execution instead of starting another; @default a new one */
  readonly requestId?: string;
  readonly yes: boolean;
  readonly confirm?: (question: string) => Promise<boolean>;
  readonly pollMs?: number;
  readonly out?: NodeJS.WritableStream;
  /** Writes the run's report once the execution ended, whatever the outcome (`--report`). */
  readonly report?: (runId: string) => Promise<void>;
}

export interface AwsRunResult {
  readonly status: ExecutionStatus;
  readonly clusterId: string;
  readonly runId: string;
  readonly executionArn: string;
  /** false: the execution of this request (or the cluster's running one) existed already. */
  readonly started: boolean;
  readonly durationMs: number;
  readonly transitions: number;
  readonly output?: unknown;
  readonly error?: { readonly name: string; readonly cause: string };
}

/** `cli-<base36 time>-<4 hex>`: a request id that MigrationRequested also accepts. */
function newRequestId(now = Date.now()): string {
  return `cli-${now.toString(36)}-${randomBytes(2).toString('hex')}`;
}

export function machineOf(target: StackTarget, kind: MigrationKind): string {
  const arn = target[kind];
  if (!arn) {
    throw new CliError(
      `no ${kind} state machine: pass --stack-outputs (from cdk deploy --outputs-file) or --state-machine-arn`,
      EXIT.badInput,
    );
  }
  return arn;
}

/** A run id and cluster from an execution name made by executionNameFor, if it is one of this cluster's. */
function runIdOf(name: string | undefined, clusterId: string): string | undefined {
  const runId = name?.match(/^(up|down)-[0-9a-f]{16}(?=-)/)?.[0];
  return runId && executionNameFor(clusterId, runId) === name ? runId : undefined;
}

export interface ExecutionOfCluster {
  readonly kind: MigrationKind;
  readonly runId: string;
  readonly executionArn: string;
  readonly status: ExecutionStatus;
  readonly startDate?: Date;
  readonly stopDate?: Date;
}

export async function executionsOf(
  sfn: SFNClient,
  stateMachineArn: string,
  kind: MigrationKind,
  clusterId: string,
  statusFilter?: ExecutionStatus,
): Promise<ExecutionOfCluster[]> {
  const found: ExecutionOfCluster[] = [];
  let nextToken: string | undefined;
  do {
    const page = await sfn.send(
      new ListExecutionsCommand({
        stateMachineArn,
        maxResults: 1000,
        ...(statusFilter ? { statusFilter } : {}),
        ...(nextToken ? { nextToken } : {}),
      }),
    );
    for (const e of page.executions ?? []) {
      const runId = runIdOf(e.name, clusterId);
      if (!runId || !e.executionArn || !e.status) continue;
      found.push({
        kind,
        runId,
        executionArn: e.executionArn,
        status: e.status,
        ...(e.startDate ? { startDate: e.startDate } : {}),
        ...(e.stopDate ? { stopDate: e.stopDate } : {}),
      });
    }
    nextToken = page.nextToken;
  } while (nextToken);
  return found;
}

const WORDS: Readonly<Record<MigrationKind, string>> = {
  upgrade: 'to an external CCM',
  downgrade: 'back to its in-tree cloud provider',
};

export async function awsMigrationCommand(cmd: AwsMigrationCommand): Promise<AwsRunResult> {
  const out = cmd.out ?? process.stdout;
  const stateMachineArn = machineOf(cmd.target, cmd.kind);
  // The cluster's run in progress is followed, as local mode resumes its unfinished run.
  const running = (await executionsOf(cmd.sfn, stateMachineArn, cmd.kind, cmd.clusterId, 'RUNNING'))[0];
  let start: { executionArn: string; runId: string; started: boolean };
  if (running) {
    out.write(`following ${cmd.kind} run ${running.runId} of cluster ${cmd.clusterId}, already running\n`);
    start = { executionArn: running.executionArn, runId: running.runId, started: false };
  } else {
    const ask = cmd.confirm ?? confirm;
    if (!cmd.yes && !(await ask(confirmation(cmd, stateMachineArn)))) {
      throw new CliError('not confirmed: nothing was started', EXIT.badInput);
    }
    const request = {
      clusterId: cmd.clusterId,
      kind: cmd.kind,
      requestId: cmd.requestId ?? newRequestId(),
      maxUnavailable: cmd.maxUnavailable,
      options: cmd.options,
    };
    start = await startRun(cmd.sfn, stateMachineArn, request);
    if (start.started && cmd.events && cmd.target.eventBusName) {
      await announceStarted(cmd.events, cmd.target.eventBusName, request, start);
    }
    out.write(
      `${start.started ? 'started' : 'following'} ${cmd.kind} run ${start.runId} of cluster ${cmd.clusterId} ` +
        `(request ${request.requestId})\n  ${start.executionArn}\n`,
    );
    if (cmd.options.requireApproval) {
      out.write(
        `  after preflight it waits for: ccm-migrate approve --aws${cmd.kind === 'downgrade' ? ' --downgrade' : ''} --cluster-id ${cmd.clusterId} --run-id ${start.runId} [--reject --reason …]\n`,
      );
    }
  }
  const ended = await follow(cmd.sfn, start.executionArn, out, cmd.pollMs ?? 5000);
  const result: AwsRunResult = {
    ...ended,
    clusterId: cmd.clusterId,
    runId: start.runId,
    started: start.started,
  };
  out.write(awsSummary(cmd.kind, result));
  await cmd.report?.(result.runId);
  if (result.status !== 'SUCCEEDED') {
    const name = result.error?.name ?? ERROR_NAMES.verificationFailed;
    const code = result.status === 'TIMED_OUT' ? EXIT.timedOut : exitCodeForError(name);
    throw new CliError(`${name}: ${result.error?.cause ?? `the execution ${result.status}`}`, code);
  }
  return result;
}

function confirmation(cmd: AwsMigrationCommand, stateMachineArn: string): string {
  const verb = cmd.kind === 'upgrade' ? 'Upgrade' : 'Downgrade';
  return `${verb} cluster ${cmd.clusterId} ${WORDS[cmd.kind]} with ${stateMachineArn}?`;
}

/** An execution's history newest first, a page read only when the events before it were not enough. */
export async function* historyNewestFirst(
  sfn: SFNClient,
  executionArn: string,
): AsyncGenerator<HistoryEvent> {
  let nextToken: string | undefined;
  do {
    const page = await sfn.send(
      new GetExecutionHistoryCommand({
        executionArn,
        reverseOrder: true,
        includeExecutionData: true,
        maxResults: 1000,
        ...(nextToken ? { nextToken } : {}),
      }),
    );
    yield* page.events ?? [];
    nextToken = page.nextToken;
  } while (nextToken);
}

/** The history's events after `lastId`, oldest first: read newest first, so a long history is not re-read. */
async function newEvents(sfn: SFNClient, executionArn: string, lastId: number): Promise<HistoryEvent[]> {
  const fresh: HistoryEvent[] = [];
  for await (const e of historyNewestFirst(sfn, executionArn)) {
    if ((e.id ?? 0) <= lastId) break;
    fresh.push(e);
  }
  return fresh.reverse();
}

/**
 * The history as the local engine's progress: a state entered at the top is `▶ state`, a state entered
 * inside a Map's iteration is one line naming its node (the item the iteration got).
 */
function historyProgress(printer: ReturnType<typeof progressPrinter>) {
  let openIterations = 0;
  let transitions = 0;
  return {
    transitions: () => transitions,
    onHistoryEvent(e: HistoryEvent): void {
      if (e.type === 'MapIterationStarted') openIterations += 1;
      if (/^MapIteration(Succeeded|Failed|Aborted)$/.test(e.type ?? '')) openIterations -= 1;
      const entered = e.stateEnteredEventDetails;
      if (!entered?.name) return;
      transitions += 1;
      if (openIterations === 0) {
        printer.onEvent({ type: 'StateEntered', state: { name: entered.name } } as EventLog);
        return;
      }
      const node = nodeOf(entered.input);
      printer.onProgress({ step: entered.name, ...(node ? { node } : {}), message: 'started' });
    },
  };
}

function nodeOf(input: string | undefined): string | undefined {
  try {
    const node = (JSON.parse(input ?? 'null') as { node?: unknown } | null)?.node;
    return typeof node === 'string' ? node : undefined;
  } catch {
    return undefined;
  }
}

async function follow(sfn: SFNClient, executionArn: string, out: NodeJS.WritableStream, pollMs: number) {
  let lastId = 0;
  let startDate: Date | undefined;
  const progress = historyProgress(progressPrinter(out));
  for (;;) {
    const execution = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    startDate ??= execution.startDate;
    // Read after describing, so that the history of an ended execution is read to its end.
    for (const e of await newEvents(sfn, executionArn, lastId)) {
      progress.onHistoryEvent(e);
      lastId = e.id ?? lastId;
    }
    if (execution.status !== 'RUNNING' && execution.status !== 'PENDING_REDRIVE') {
      const status = execution.status ?? 'FAILED';
      const stopped = execution.stopDate ?? new Date();
      return {
        status,
        executionArn,
        durationMs: startDate ? stopped.getTime() - startDate.getTime() : 0,
        transitions: progress.transitions(),
        ...(execution.output ? { output: JSON.parse(execution.output) as unknown } : {}),
        ...(status !== 'SUCCEEDED'
          ? { error: { name: execution.error || status, cause: execution.cause || `execution ${status}` } }
          : {}),
      };
    }
    await sleep(pollMs);
  }
}

function awsSummary(kind: MigrationKind, result: AwsRunResult): string {
  return (
    renderSummary(
      `${kind} ${result.status.toLowerCase()}: cluster ${result.clusterId}, run ${result.runId}${result.started ? '' : ' (followed)'}`,
      [
        ['execution', result.executionArn],
        ['duration', `${(result.durationMs / 1000).toFixed(1)} s`],
        ['nodes', verifiedNodes(result.output)],
        ['states entered', result.transitions],
      ],
      result.error,
    ) + joinSourcesAfter(kind, result.status === 'SUCCEEDED')
  );
}

export interface AwsStatusCommand {
  readonly clusterId: string;
  readonly sfn: SFNClient;
  readonly target: StackTarget;
  readonly out?: NodeJS.WritableStream;
}

/** The cluster's executions on the stack's upgrade and downgrade machines, newest first. */
export async function executionsOfCluster(
  sfn: SFNClient,
  target: StackTarget,
  clusterId: string,
): Promise<ExecutionOfCluster[]> {
  const kinds = (['upgrade', 'downgrade'] as const).filter((k) => target[k]);
  if (kinds.length === 0) machineOf(target, 'upgrade');
  return (await Promise.all(kinds.map((k) => executionsOf(sfn, target[k] as string, k, clusterId))))
    .flat()
    .sort((a, b) => (b.startDate?.getTime() ?? 0) - (a.startDate?.getTime() ?? 0));
}

/** The cluster's executions on the stack's machines, newest first, one line each. */
export async function awsStatusCommand(cmd: AwsStatusCommand): Promise<ExecutionOfCluster[]> {
  const out = cmd.out ?? process.stdout;
  const all = await executionsOfCluster(cmd.sfn, cmd.target, cmd.clusterId);
  if (all.length === 0) {
    out.write(`no runs of cluster ${cmd.clusterId}\n`);
    return all;
  }
  out.write(`runs of cluster ${cmd.clusterId}, newest first:\n`);
  for (const e of all) {
    out.write(
      `  ${e.runId.padEnd(22)} ${e.kind.padEnd(9)} ${e.status.padEnd(9)} ` +
        `${e.startDate?.toISOString() ?? '-'}  ${e.stopDate?.toISOString() ?? '-'}\n`,
    );
  }
  return all;
}

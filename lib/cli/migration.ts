/**
 * `ccm-migrate upgrade` and `downgrade`: one cluster's run in local mode, with progress per step and node,
 * a summary, and an exit code per failure kind. The kubeconfig stays on this machine: only its server
 * address is printed.
 */
import { ApprovalRejectedError, ERROR_NAMES } from '../errors.ts';
import type { KubeClients } from '../kube/clients.ts';
import { call } from '../kube/errors.ts';
import type { Approver } from '../local/approval.ts';
import type { EventLog } from '../local/engine.ts';
import {
  type MigrationKind,
  type MigrationRunResult,
  runDowngradeLocally,
  runUpgradeLocally,
} from '../local/migration.ts';
import type { Progress } from '../steps/context.ts';
import type { UpgradeOptions } from '../steps/schemas.ts';
import type { RunStore } from '../store/run-store.ts';
import { confirm } from './confirm.ts';
import { CliError, EXIT, exitCodeForError } from './exit-codes.ts';
import { joinSourcesAfter } from './join-sources.ts';

export interface MigrationCommand {
  readonly kind: MigrationKind;
  readonly clients: KubeClients;
  readonly store: RunStore;
  readonly clusterId: string;
  readonly maxUnavailable: number;
  readonly options: UpgradeOptions;
  readonly yes: boolean;
  readonly agentImage?: string;
  /** @default y/N at the terminal (lib/cli/confirm.ts) */
  readonly confirm?: (question: string) => Promise<boolean>;
  readonly out?: NodeJS.WritableStream;
  /** Writes the run's report once it ended, whatever the outcome (`--report`). */
  readonly report?: (runId: string) => Promise<void>;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** Progress lines: each state the engine enters (Maps and their items aside) and what the steps report. */
export function progressPrinter(out: NodeJS.WritableStream, started = Date.now()) {
  const stamp = (): string => `[${seconds(Date.now() - started).padStart(7)}]`;
  return {
    onEvent: (event: EventLog): void => {
      if (event.type === 'StateEntered' && !('index' in event && event.index !== undefined)) {
        out.write(`${stamp()} ▶ ${event.state.name}\n`);
      }
    },
    onProgress: (p: Progress): void => {
      out.write(`${stamp()}   ${p.step}${p.node ? ` ${p.node}` : ''}: ${p.message}\n`);
    },
  };
}

type SummaryRow = readonly [label: string, value: string | number | undefined];

/** A run's summary: a heading, one aligned `label: value` line per row with a value, then the error. */
export function renderSummary(
  head: string,
  rows: readonly SummaryRow[],
  error?: { readonly name: string; readonly cause: string },
): string {
  const line = (label: string, value: string | number) => `  ${`${label}:`.padEnd(19)}${value}`;
  const lines = [
    '',
    head,
    ...rows.flatMap(([label, value]) => (value === undefined ? [] : [line(label, value)])),
  ];
  if (error) lines.push(line('error', `${error.name}: ${error.cause}`));
  return `${lines.join('\n')}\n`;
}

/** How many nodes a finished run verified (its execution output's `verification.nodes`). */
export function verifiedNodes(output: unknown): number | undefined {
  return (output as { verification?: { nodes?: number } } | undefined)?.verification?.nodes;
}

export function summary(kind: MigrationKind, result: MigrationRunResult): string {
  const status = result.status === 'SUCCEEDED' ? 'succeeded' : result.status.toLowerCase();
  return (
    renderSummary(
      `${kind} ${status}: cluster ${result.clusterId}, run ${result.runId}${result.resumed ? ' (resumed)' : ''}`,
      [
        ['duration', seconds(result.durationMs)],
        ['nodes', verifiedNodes(result.output)],
        ['API requests', result.apiRequests],
        ['state transitions', result.transitions],
      ],
      result.error,
    ) + joinSourcesAfter(kind, result.status === 'SUCCEEDED')
  );
}

const WORDS: Readonly<Record<MigrationKind, { question: string; doing: string }>> = {
  upgrade: { question: 'to an external CCM', doing: 'upgrading' },
  downgrade: { question: 'back to its in-tree cloud provider', doing: 'downgrading' },
};

/** The approval gate in local mode: asked like the confirmation, after preflight; `--yes` answers both. */
function localApprover(cmd: MigrationCommand, out: NodeJS.WritableStream): Approver {
  const ask = cmd.confirm ?? confirm;
  return async (request) => {
    const what =
      `cluster ${request.clusterId} (${request.provider}, Kubernetes ${request.kubernetesVersion}, ` +
      `${request.nodes} nodes)`;
    if (cmd.yes) {
      out.write(`approved by --yes: ${what}\n`);
      return;
    }
    if (!(await ask(`Preflight passed for ${what}. Change it now?`))) {
      throw new ApprovalRejectedError('not approved at the terminal: nothing was changed');
    }
  };
}

export async function migrationCommand(cmd: MigrationCommand): Promise<MigrationRunResult> {
  const words = WORDS[cmd.kind];
  const out = cmd.out ?? process.stdout;
  const ask = cmd.confirm ?? confirm;
  // Fail fast on a wrong address: inside the workflow an unreachable API is retried for minutes.
  const version = await call(`reach the API server at ${cmd.clients.server}`, () =>
    cmd.clients.version.getCode(),
  );
  if (
    !cmd.yes &&
    !(await ask(
      `${cmd.kind === 'upgrade' ? 'Upgrade' : 'Downgrade'} cluster ${cmd.clusterId} at ${cmd.clients.server} ${words.question}?`,
    ))
  ) {
    throw new CliError('not confirmed: nothing was changed', EXIT.badInput);
  }
  out.write(
    `${words.doing} cluster ${cmd.clusterId} at ${cmd.clients.server} (Kubernetes ${version.gitVersion})\n`,
  );
  const printer = progressPrinter(out);
  const run = cmd.kind === 'upgrade' ? runUpgradeLocally : runDowngradeLocally;
  const result = await run({
    clients: cmd.clients,
    store: cmd.store,
    clusterId: cmd.clusterId,
    maxUnavailable: cmd.maxUnavailable,
    options: cmd.options,
    approve: localApprover(cmd, out),
    ...(cmd.agentImage ? { agentImage: cmd.agentImage } : {}),
    ...printer,
  });
  out.write(summary(cmd.kind, result));
  await cmd.report?.(result.runId);
  if (result.status !== 'SUCCEEDED') {
    const name = result.error?.name ?? ERROR_NAMES.verificationFailed;
    throw new CliError(`${name}: ${result.error?.cause ?? 'the run did not finish'}`, exitCodeForError(name));
  }
  return result;
}

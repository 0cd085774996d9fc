/** `ccm-migrate rehearse`: the report of a rehearsal on the cluster's twin, and its exit code. */
import type { KubeClients } from '../kube/clients.ts';
import type { FileChange } from '../local/plan.ts';
import { type Rehearsal, type RehearsalOptions, rehearse } from '../rehearse/rehearse.ts';
import { CliError, EXIT, exitCodeForError } from './exit-codes.ts';
import { describeSnapshot, READ_ONLY_NOTE } from './twin-snapshot.ts';

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** Each file change once, with the nodes it applies to (the control plane's differ only by address). */
function fileChanges(files: readonly FileChange[]): string[] {
  const byChange = new Map<string, { path: string; diff: string; nodes: string[] }>();
  for (const f of files) {
    const key = `${f.path}\n${f.diff}`;
    const entry = byChange.get(key) ?? { path: f.path, diff: f.diff, nodes: [] };
    entry.nodes.push(f.node);
    byChange.set(key, entry);
  }
  return [...byChange.values()].flatMap((c) => [
    `  --- ${c.path} on ${c.nodes.length} node(s): ${c.nodes.join(', ')}`,
    ...c.diff
      .trimEnd()
      .split('\n')
      .map((l) => `    ${l}`),
  ]);
}

/** The violations that mean the migration broke something (the API down during a restart does not). */
function broken(r: Rehearsal) {
  return r.violations.filter((v) => v.kind !== 'api-unavailable');
}

export function renderRehearsal(r: Rehearsal): string {
  const lat = r.spec.latencies;
  const lines = [
    '',
    `twin: ${r.stateDir} (latencies: static pod restart ${lat.staticPodRestart} ms, kubelet restart ${lat.kubeletRestart} ms, agent Job start ${lat.jobStart} ms, lease ${lat.leaseDuration} ms: the twin spec's defaults until the realistic profile lands)`,
    describeSnapshot(r.snapshot).trimEnd(),
    '',
    'preflight on the real cluster (plan, read-only):',
    ...(r.realRefusals.length === 0
      ? ['  no refusal: an upgrade would go ahead']
      : r.realRefusals.map((x) => `  refuses: ${x.name}: ${x.message}`)),
    '',
    r.files
      ? `node files the upgrade changes (plan on the twin: ${r.files.length} file(s)):`
      : 'node files: plan on the twin refused (see the upgrade below)',
    ...fileChanges(r.files ?? []),
  ];
  for (const run of r.runs) {
    lines.push('', `${run.kind} on the twin: ${run.status.toLowerCase()} in ${seconds(run.durationMs)}`);
    for (const s of run.steps) lines.push(`  ${seconds(s.ms).padStart(8)}  ${s.state}`);
    if (run.error) lines.push(`  error: ${run.error.name}: ${run.error.message}`);
  }
  const kinds = new Map<string, number>();
  for (const v of r.violations) kinds.set(v.kind, (kinds.get(v.kind) ?? 0) + 1);
  lines.push(
    '',
    'invariants (twin monitor):',
    ...(kinds.size === 0 ? ['  none seen'] : [...kinds].map(([k, n]) => `  ${k}: ${n} interval(s)`)),
    `  verdict: ${broken(r).length === 0 ? 'clean' : `${broken(r).length} violation(s) of the cloud-controller invariants`}`,
  );
  return `${lines.join('\n')}\n`;
}

/** Why the rehearsal is not clean, as the CLI exits with it; undefined when it migrated and came back. */
export function verdict(r: Rehearsal): CliError | undefined {
  const refusal = r.realRefusals[0];
  if (refusal) {
    return new CliError(
      `rehearsal: preflight refuses the real cluster: ${refusal.name}: ${refusal.message}`,
      exitCodeForError(refusal.name),
    );
  }
  for (const run of r.runs) {
    if (run.status !== 'SUCCEEDED') {
      const name = run.error?.name ?? 'Failed';
      return new CliError(
        `rehearsal: the ${run.kind} failed on the twin: ${name}: ${run.error?.message ?? 'it did not finish'}`,
        exitCodeForError(name),
      );
    }
  }
  if (r.runs.length < 2) return new CliError('rehearsal: the downgrade did not run', EXIT.failed);
  const violations = broken(r).length;
  if (violations > 0) {
    return new CliError(
      `rehearsal: the twin recorded ${violations} cloud-controller invariant violation(s)`,
      EXIT.failed,
    );
  }
  return undefined;
}

export async function rehearseCommand(
  cmd: Omit<RehearsalOptions, 'onProgress'> & { clients: KubeClients; out?: NodeJS.WritableStream },
): Promise<Rehearsal> {
  const out = cmd.out ?? process.stdout;
  out.write(
    `rehearsal of cluster ${cmd.clusterId} at ${cmd.clients.server} on its twin (${READ_ONLY_NOTE})\n`,
  );
  const result = await rehearse({ ...cmd, onProgress: (m) => out.write(`  ${m}\n`) });
  out.write(renderRehearsal(result));
  const failed = verdict(result);
  if (failed) throw failed;
  out.write('\nthe rehearsal migrated and came back clean: nothing in the real cluster was changed\n');
  return result;
}

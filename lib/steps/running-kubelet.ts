/**
 * The running kubelet against the flag files ccm-migrate edits, as the node agent reports both (the
 * kubelet's command line from the host's /proc, and the files): before any change a value no file gives (a
 * drop-in's own ExecStart, an environment file ccm-migrate does not edit) means the flip would leave it in
 * force; after the flip, the restarted kubelet must run exactly what the files give (issue 15, item 6).
 */
import type { AgentResult } from '../agent/protocol.ts';
import { VerificationFailedError } from '../errors.ts';
import { waitForNodeReady } from './cluster.ts';
import type { StepContext } from './context.ts';
import type { NodeEvent } from './schemas.ts';

type KubeletFlags = AgentResult['kubeletFlags'];

/** Each value of `from` that `against` does not account for, one occurrence each, as `--flag=value`. */
function unmatched(
  from: Readonly<Record<string, readonly string[]>>,
  against: Readonly<Record<string, readonly string[]>>,
): string[] {
  return Object.entries(from).flatMap(([flag, values]) => {
    const left = [...(against[flag] ?? [])];
    return values.flatMap((value) => {
      const at = left.indexOf(value);
      if (at < 0) return [`--${flag}=${value}`];
      left.splice(at, 1);
      return [];
    });
  });
}

/** The running kubelet's values that its files do not give, as "node: --flag=value". */
export function uneditedKubeletFlags(node: string, flags: KubeletFlags): string[] {
  if (flags === undefined) return [`${node}: no kubelet process is visible (the agent needs hostPID)`];
  return unmatched(flags.running, flags.files).map((f) => `${node}: ${f}`);
}

/** How the running kubelet differs from its files, both ways, in words; [] when it runs what they give. */
export function kubeletDifferences(flags: KubeletFlags): string[] {
  if (flags === undefined) return ['no kubelet process runs'];
  return [
    ...unmatched(flags.running, flags.files).map((f) => `runs ${f}, which its files do not give`),
    ...unmatched(flags.files, flags.running).map((f) => `its files give ${f}, which it does not run`),
  ];
}

/**
 * After the flip: the kubelet that runs now has the flags its files give. One that does not is restarted
 * once (a run cut between the flip's write and its restart resumes to files that need no change, and so no
 * restart); one that still runs other flags then (something ccm-migrate does not edit gives them) fails
 * the step, naming them, and the run rolls back. `flipped`: what the flip's own answer says of the
 * kubelet (the restarted one's flags, when it restarted it), so that no second agent pod is needed;
 * without it, the node is inspected.
 */
export async function confirmRunningKubelet(
  event: NodeEvent,
  ctx: StepContext,
  flipped?: KubeletFlags,
): Promise<void> {
  const differences = async () =>
    kubeletDifferences((await ctx.agent(event.node, { op: 'inspect', runId: event.runId })).kubeletFlags);
  if ((flipped ? kubeletDifferences(flipped) : await differences()).length === 0) return;
  await ctx.agent(event.node, { op: 'restart-kubelet', runId: event.runId });
  await waitForNodeReady(ctx, event.node);
  const still = await differences();
  if (still.length > 0) {
    throw new VerificationFailedError(
      `the kubelet on ${event.node} does not run what the flip wrote, restarted: it ${still.slice(0, 5).join('; ')}`,
    );
  }
}

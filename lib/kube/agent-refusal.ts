/**
 * The named error for an agent Job whose launcher refused to run the agent (lib/agent/launcher.ts), or
 * whose pre-started agent got no go signal (lib/agent/go-signal.ts): it touched nothing on the node, and
 * the operator is told what to do about it.
 */
import type { AgentRefusal } from '../agent/protocol.ts';
import {
  AgentBundleMismatchError,
  AgentFailedError,
  AgentImageUnfitError,
  type CcmMigrateError,
} from '../errors.ts';

export interface RefusalFacts {
  readonly refusal: AgentRefusal;
  readonly node: string;
  readonly image: string;
  readonly configMap: string;
  /** The launcher's own words (the sha256 it found, the PATH it searched). */
  readonly detail: string | undefined;
}

export function refusalError(facts: RefusalFacts): CcmMigrateError {
  const detail = facts.detail ? ` (${facts.detail})` : '';
  switch (facts.refusal) {
    case 'no-nsenter':
      return new AgentImageUnfitError(
        `the agent image ${facts.image} has no nsenter; the agent restarts the kubelet through it. ` +
          `Use an image with Node 22 and nsenter (util-linux or busybox's), e.g. the default: nothing on node ${facts.node} was changed${detail}`,
      );
    case 'bundle-sha256':
      return new AgentBundleMismatchError(
        `the agent bundle in ConfigMap ${facts.configMap} is not the one this run applied: it was changed since ` +
          `(edited, or replaced by another version of ccm-migrate), so the agent Job did not run it; nothing on node ${facts.node} was changed${detail}. ` +
          `Find out who changed it; the next run applies it again`,
      );
    case 'no-go-signal':
      return new AgentFailedError(
        `the pre-started agent Job on node ${facts.node} got no go signal, so it ran nothing: nothing on node ${facts.node} was changed${detail}`,
      );
  }
}

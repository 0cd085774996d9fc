/** `restart-kubelet`: nothing to change on disk; whoever runs the agent restarts the kubelet after it exits. */
import type { AgentResult } from '../protocol.ts';

export function restartKubelet(): AgentResult {
  return { op: 'restart-kubelet', ok: true, changed: false, restartKubelet: true, files: [] };
}

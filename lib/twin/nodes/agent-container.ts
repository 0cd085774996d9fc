/**
 * What happens in a node agent pod's container before the agent itself runs, as the twin reads the pod:
 * - the image lacks the program the command starts (spec.images): the container never starts (the
 *   runtime's StartError, exit code 128, its error as the message);
 * - the command is a launcher (`node … -e <script>`, lib/agent/launcher.ts's contract): it refuses, as its
 *   answer says, when the image lacks nsenter, or when the bundle file it is given, read through the pod's
 *   ConfigMap volume from the store as the kubelet mounts it, does not have the sha256 it is given. The twin
 *   hashes what it mounts itself; it runs no script from the pod.
 * Anything else (`node <file>`, or no command, as the twin's own tests make agent pods) runs the agent.
 */
import { createHash } from 'node:crypto';
import {
  AGENT_BUNDLE_ENV,
  AGENT_GO_ENV,
  AGENT_REQUEST_ENV,
  AGENT_SHA256_ENV,
  type AgentRefusal,
  type AgentResult,
} from '../../agent/protocol.ts';
import type { TwinContext } from '../context.ts';
import type { KubeObject } from '../store.ts';

interface Container {
  readonly image?: string;
  readonly command?: readonly string[];
  readonly env?: readonly { name: string; value?: string }[];
  readonly volumeMounts?: readonly { name: string; mountPath: string }[];
}

interface AgentPodSpec {
  readonly serviceAccountName?: string;
  readonly automountServiceAccountToken?: boolean;
  readonly containers?: readonly Container[];
  readonly volumes?: readonly { name: string; configMap?: { name: string } }[];
}

/** The container does not start; it refuses, with its answer; or it runs the agent. */
export type AgentStart =
  | { readonly kind: 'not-started'; readonly message: string }
  | { readonly kind: 'refused'; readonly answer: AgentResult }
  | { readonly kind: 'run' };

/** The pod's ConfigMap volume key at `file`, as the kubelet mounts it; undefined when there is none. */
function mountedConfigMapKey(
  ctx: TwinContext,
  pod: KubeObject,
  container: Container,
  file: string,
): string | undefined {
  const mount = container.volumeMounts?.find((m) => file.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
  const volume = (pod.spec as AgentPodSpec).volumes?.find((v) => v.name === mount?.name);
  if (!mount || !volume?.configMap) return undefined;
  const configMap = ctx.store.tryGet('configmaps', pod.metadata.namespace, volume.configMap.name);
  const key = file.slice(mount.mountPath.replace(/\/$/, '').length + 1);
  return (configMap?.data as Record<string, string> | undefined)?.[key];
}

function refused(env: Map<string, string>, refusal: AgentRefusal, error: string): AgentStart {
  let op = 'unknown';
  try {
    op = JSON.parse(env.get(AGENT_REQUEST_ENV) ?? '').op ?? op;
  } catch {
    // The agent would answer an unreadable request itself; the refusal names no operation.
  }
  return {
    kind: 'refused',
    answer: { op, ok: false, changed: false, restartKubelet: false, files: [], refused: refusal, error },
  };
}

export function agentContainerStart(ctx: TwinContext, pod: KubeObject): AgentStart {
  const container = (pod.spec as AgentPodSpec).containers?.[0] ?? {};
  const image = container.image ?? '';
  const lacks = new Set(ctx.spec.images[image]?.lacks ?? []);
  const [program, ...args] = container.command ?? [];
  if (program !== undefined && lacks.has(program)) {
    return { kind: 'not-started', message: `exec: "${program}": executable file not found in $PATH` };
  }
  if (program !== 'node' || !args.includes('-e')) return { kind: 'run' };
  const env = new Map((container.env ?? []).map((e) => [e.name, e.value ?? '']));
  if (lacks.has('nsenter')) return refused(env, 'no-nsenter', `the twin's image ${image} lacks nsenter`);
  const file = env.get(AGENT_BUNDLE_ENV) ?? '';
  // A real pod whose ConfigMap is missing waits in ContainerCreating; the twin answers as for a missing key.
  const bundle = mountedConfigMapKey(ctx, pod, container, file);
  if (bundle === undefined) return refused(env, 'bundle-sha256', `nothing mounted at ${file}`);
  const actual = createHash('sha256').update(bundle).digest('hex');
  const expected = env.get(AGENT_SHA256_ENV) ?? '';
  return actual === expected
    ? { kind: 'run' }
    : refused(
        env,
        'bundle-sha256',
        `the bundle ${file} has sha256 ${actual}, the Job expects ${expected || 'none'}`,
      );
}

/**
 * A pre-started agent (its container's environment names a go signal, `<namespace>/<configMap>/<key>/
 * <value>`): what it waits for before it runs, the key with that value. The twin waits as long as the pod
 * lives (its runs are short; the real agent gives up at its Job's bound, AGENT_GO_UNTIL_ENV). It reads the signal with its pod's ServiceAccount token, so a pod
 * without one (automount off, on the pod or else its ServiceAccount) never gets it and refuses, as the
 * real agent does once its wait is over; the twin answers at once. The in-process twin authorises every
 * request (as its access reviews say); a real-API twin's kube-apiserver refused the pod already if its
 * ServiceAccount did not exist. Resolves with 'run' once the key shows in the ConfigMap, with a refusal,
 * or with undefined once the pod is gone (`gone`).
 */
export function awaitAgentGo(
  ctx: TwinContext,
  pod: KubeObject,
  gone: () => boolean,
): Promise<AgentStart | undefined> {
  const spec = pod.spec as AgentPodSpec;
  const container = spec.containers?.[0] ?? {};
  const env = new Map((container.env ?? []).map((e) => [e.name, e.value ?? '']));
  const signal = env.get(AGENT_GO_ENV);
  if (signal === undefined) return Promise.resolve({ kind: 'run' });
  const [namespace = '', configMap = '', key = '', value] = signal.split('/');
  const account = ctx.store.tryGet(
    'serviceaccounts',
    pod.metadata.namespace,
    spec.serviceAccountName ?? 'default',
  );
  const mounted =
    spec.automountServiceAccountToken ??
    (account as { automountServiceAccountToken?: boolean } | undefined)?.automountServiceAccountToken ??
    true;
  if (!mounted) {
    return Promise.resolve(
      refused(
        env,
        'no-go-signal',
        `no ServiceAccount token in pod ${pod.metadata.name} to read ${signal} with`,
      ),
    );
  }
  const given = (): boolean => {
    const data = ctx.store.tryGet('configmaps', namespace, configMap)?.data as
      | Record<string, string>
      | undefined;
    return data?.[key] !== undefined && (value === undefined || data[key] === value);
  };
  return new Promise((resolve) => {
    if (given()) return resolve({ kind: 'run' });
    const finish = (start: AgentStart | undefined): void => {
      stop();
      ctx.signal.removeEventListener('abort', onAbort);
      resolve(start);
    };
    const onAbort = (): void => finish(undefined);
    const stop = ctx.store.subscribe((event) => {
      if (event.key === 'configmaps' && given()) finish({ kind: 'run' });
      else if (event.key === 'pods' && gone()) finish(undefined);
    });
    ctx.signal.addEventListener('abort', onAbort, { once: true });
  });
}

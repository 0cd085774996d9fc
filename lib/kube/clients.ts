/**
 * Cluster access: the typed API clients a step needs, built from a kubeconfig (a file in local mode, the
 * text of a Secrets Manager secret in AWS, the file a twin writes). The kubeconfig's contents never leave
 * this module: results and errors name the server only.
 */
import {
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  StorageV1Api,
  VersionApi,
  Watch,
} from '@kubernetes/client-node';
import { InvalidInputError } from '../errors.ts';

export interface KubeClients {
  /** The API server's URL (safe to log). */
  readonly server: string;
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly batch: BatchV1Api;
  readonly coordination: CoordinationV1Api;
  /** StorageClasses, CSIDrivers, CSINodes, VolumeAttachments: preflight's and drift's storage inventory. */
  readonly storage: StorageV1Api;
  readonly version: VersionApi;
  /** Any kind by apiVersion/kind: server-side apply of provider manifests. */
  readonly objects: KubernetesObjectApi;
  /** Watches: a wait wakes on a change instead of finding it at its next poll. */
  readonly watch: Watch;
  /** API requests sent so far through these clients (a run's summary reports them). */
  requests(): number;
}

/**
 * One API request's limit. A request the API server never answers (a connection black-holed when its
 * control-plane node went away without a reset) would otherwise hold the step until Lambda's timeout kills
 * it mid-write; cut here it is ClusterUnreachable, which the waits and retries ride out. Twice this fits in
 * the margin a step keeps after its deadline (lib/steps/time-budget.ts: the look in flight, then the
 * cleanup's). Watches are not cut: they have their own inactivity timeout.
 */
export const REQUEST_TIMEOUT_MS = 10_000;

export interface ClientOptions {
  /** @default REQUEST_TIMEOUT_MS */
  readonly requestTimeoutMs?: number;
}

function clientsFor(kc: KubeConfig, source: string, opts: ClientOptions = {}): KubeClients {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new InvalidInputError(`${source} has no current cluster with a server address`);
  const timeoutMs = opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  // Every request of every generated client authenticates through the KubeConfig: count and bound it there
  // (a watch authenticates there too, but fetches with its own signal).
  let requests = 0;
  const authenticate = kc.applySecurityAuthentication.bind(kc);
  kc.applySecurityAuthentication = (context) => {
    requests += 1;
    if (!context.getSignal()) context.setSignal(AbortSignal.timeout(timeoutMs));
    return authenticate(context);
  };
  return {
    requests: () => requests,
    server,
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    batch: kc.makeApiClient(BatchV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    storage: kc.makeApiClient(StorageV1Api),
    version: kc.makeApiClient(VersionApi),
    objects: KubernetesObjectApi.makeApiClient(kc),
    watch: new Watch(kc),
  };
}

/** Switch to a named context; an unknown one is bad input that lists the contexts there are. */
function useContext(kc: KubeConfig, context: string | undefined, source: string): void {
  if (context === undefined) return;
  const names = kc.getContexts().map((c) => c.name);
  if (!names.includes(context)) {
    throw new InvalidInputError(
      `${source} has no context "${context}" (it has: ${names.join(', ') || 'none'})`,
    );
  }
  kc.setCurrentContext(context);
}

/** Clients from a kubeconfig file; a missing or unreadable file is bad input, named by its path only. */
export function clientsFromKubeconfigFile(
  file: string,
  context?: string,
  opts: ClientOptions = {},
): KubeClients {
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InvalidInputError(
      `cannot load kubeconfig ${file}: ${code ?? 'not a valid kubeconfig (YAML with clusters, users and contexts)'}`,
    );
  }
  useContext(kc, context, `kubeconfig ${file}`);
  return clientsFor(kc, `kubeconfig ${file}`, opts);
}

/** Clients from kubeconfig text (a secret's value). `source` names it in errors, e.g. the secret's ARN. */
export function clientsFromKubeconfigText(text: string, source: string): KubeClients {
  const kc = new KubeConfig();
  try {
    kc.loadFromString(text);
  } catch {
    // The parser's message may quote the text, which holds credentials: say only where it came from.
    throw new InvalidInputError(`${source} is not a valid kubeconfig`);
  }
  return clientsFor(kc, source);
}

/**
 * The node agent's contract: what the orchestrator asks of it (in the Job's environment) and what it
 * answers (through the container's termination message). One schema for both sides.
 *
 * The orchestrator never sees a node file's text: the agent answers with hashes, the cloud-related flags it
 * parsed and, for a change, a short unified diff. That keeps every answer inside the termination message's
 * 4 KiB and keeps file contents (which can hold credentials) out of state payloads and logs.
 */
import * as z from 'zod';

/** Pods with this label value under `app.kubernetes.io/name` run the agent. */
export const AGENT_NAME = 'ccm-migrate-agent';
/** Environment variable carrying the JSON request. */
export const AGENT_REQUEST_ENV = 'CCM_MIGRATE_AGENT_REQUEST';
/** Where the agent writes its answer; @default /dev/termination-log (tests point it elsewhere). */
export const TERMINATION_LOG_ENV = 'CCM_MIGRATE_AGENT_TERMINATION_LOG';
/** Environment variables of the Job's launcher (lib/agent/launcher.ts): the bundle's path and its sha256. */
export const AGENT_BUNDLE_ENV = 'CCM_MIGRATE_AGENT_BUNDLE';
export const AGENT_SHA256_ENV = 'CCM_MIGRATE_AGENT_SHA256';
/**
 * A pre-started agent (a Job created ahead of its node's turn) waits for its go signal: the key named by
 * this variable (`<namespace>/<configMap>/<key>/<value>`) showing in that ConfigMap's data with that value. It reads the ConfigMap
 * with its pod's ServiceAccount token, the only API access an agent has (lib/kube/agent-account.ts).
 */
export const AGENT_GO_ENV = 'CCM_MIGRATE_AGENT_GO';
/** Until when (epoch ms) a pre-started agent waits for its go: within its Job's activeDeadlineSeconds. */
export const AGENT_GO_UNTIL_ENV = 'CCM_MIGRATE_AGENT_GO_UNTIL';
/** The ConfigMap that holds the go signals, a key per pre-started Job (its name). */
export const AGENT_GO_CONFIGMAP = 'ccm-migrate-agent-go';
/** The ServiceAccount of pre-started agent pods: allowed to read AGENT_GO_CONFIGMAP, nothing else. */
export const AGENT_SERVICE_ACCOUNT = 'ccm-migrate-agent';
/** Kubernetes keeps at most 4096 bytes of a termination message. */
export const TERMINATION_MESSAGE_LIMIT = 4096;

const HostPath = z.string().startsWith('/');
const RunId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, 'a run id: letters, digits, . _ -');

/** A flag's new value; `null` removes every occurrence of it. */
const FlagChanges = z.record(z.string().min(1), z.string().nullable());
/** A feature gate's new value inside `--feature-gates` (or a kubelet config's featureGates); `null` removes it. */
const GateChanges = z.record(z.string().min(1), z.boolean().nullable());

export const InspectRequestSchema = z.object({
  op: z.literal('inspect'),
  runId: RunId,
  /** Absolute host paths to report on; kubelet flag sources are always reported too. */
  paths: z.array(HostPath).default([]),
  /** Also report the digests of what this earlier run backed up (a downgrade checks its way back). */
  backupsOf: RunId.optional(),
});

/** Change flags in static pod manifests (first container's command/args). */
export const StaticPodEditSchema = z.object({
  path: HostPath,
  flags: FlagChanges.default({}),
  featureGates: GateChanges.default({}),
  /**
   * Remove the hostPath volume and its mount that carry the file a removed `--cloud-config` pointed at,
   * when no remaining flag of the container refers to it.
   */
  dropUnusedCloudConfigVolume: z.boolean().default(false),
});
export type StaticPodEdit = z.infer<typeof StaticPodEditSchema>;

export const SetFlagsRequestSchema = z.object({
  op: z.literal('set-flags'),
  runId: RunId,
  /** Report what would change (with diffs) and change nothing. */
  dryRun: z.boolean().default(false),
  staticPods: z.array(StaticPodEditSchema).default([]),
  /**
   * Kubelet flags, wherever this node keeps them (see KUBELET_FLAG_SOURCES): a flag is set where it is
   * already given (or in kubeadm-flags.env when nowhere) and removed from every source. The kubelet is
   * restarted after the agent exits when a source changed.
   */
  kubelet: z
    .object({
      flags: FlagChanges.default({}),
      featureGates: GateChanges.default({}),
      /**
       * The Node this kubelet is registered as. Off the in-tree provider a kubelet names itself after
       * --hostname-override or its host (lowercased): where that is another name, the change pins this one
       * with --hostname-override (restoring the run's backups takes it out again).
       */
      keepNodeName: z.string().min(1).optional(),
      /**
       * The cloud's credential plugin takes over from the kubelet's in-tree credential provider, where the
       * kubelet pulls with it and the plugin is installed (lib/providers/image-credentials.ts): the config
       * is written (backed up as absent) and the kubelet pointed at it. `required`: a node without the
       * plugin is refused, nothing changed (preflight found images that need it).
       */
      imageCredentials: z
        .object({ provider: z.string().min(1), minor: z.int(), required: z.boolean().default(false) })
        .optional(),
    })
    .optional(),
});

export const RestartKubeletRequestSchema = z.object({
  op: z.literal('restart-kubelet'),
  runId: RunId,
});

export const RestoreRequestSchema = z.object({
  op: z.literal('restore'),
  runId: RunId,
  /** Restore these files from the run's backups; every file the run backed up when empty. */
  paths: z.array(HostPath).default([]),
  /** Skip named files the run has no backup of (it never changed them) instead of refusing. */
  skipMissing: z.boolean().default(false),
  /**
   * Edits applied to restored static pod manifests before they are written, so that a component comes
   * back in one restart as its original plus these flags (a downgrade's leader migration phase).
   */
  staticPods: z.array(StaticPodEditSchema).default([]),
  /**
   * What each original was, as the run's snapshot recorded it (sha256, null for a file that did not
   * exist): a backup that differs is refused before anything is written. Paths not named are not checked.
   */
  expected: z.record(HostPath, z.string().nullable()).default({}),
  dryRun: z.boolean().default(false),
});

/**
 * Write the external CCM's copy of an in-tree cloud config next to the original (which stays, for the way
 * back), backed up as absent so that the run's restore removes it. A config that needs no translation is
 * left alone and nothing is written. The answer names the credentials Secret the original refers to, never
 * a line of either file.
 */
export const TranslateCloudConfigRequestSchema = z.object({
  op: z.literal('translate-cloud-config'),
  runId: RunId,
  provider: z.literal('openstack'),
  source: HostPath,
  target: HostPath,
  /** Report what the original names, write nothing. */
  dryRun: z.boolean().default(false),
});

/**
 * Read, for a twin of this node (`twin snapshot`), the files the twin's kubelet and the migration read:
 * the static pod manifests, the kubelet's flag sources, its systemd unit and drop-ins, its --config-dir
 * drop-ins and its credential provider config, with the node's own name and address written as
 * `{{nodeName}}` and `{{nodeIP}}` (so that nodes differing only in those share one file). Never a cloud
 * config, a credential plugin or anything under /etc/kubernetes/pki: those are only named (`withheld`).
 * Without `chunk` it lists the files (the sha256 and size of each templated text); with it, it answers as
 * much of that file's templated text from `offset` as fits the termination message (one Job per chunk).
 */
export const ReadFilesRequestSchema = z.object({
  op: z.literal('read-files'),
  runId: RunId,
  template: z.object({ nodeName: z.string().min(1), nodeIP: z.string().min(1) }),
  chunk: z.object({ path: HostPath, offset: z.int().nonnegative() }).optional(),
});

export const AgentRequestSchema = z.discriminatedUnion('op', [
  InspectRequestSchema,
  SetFlagsRequestSchema,
  RestartKubeletRequestSchema,
  RestoreRequestSchema,
  TranslateCloudConfigRequestSchema,
  ReadFilesRequestSchema,
]);
export type AgentRequest = z.input<typeof AgentRequestSchema>;
export type ParsedAgentRequest = z.infer<typeof AgentRequestSchema>;

export const FileReportSchema = z.object({
  path: z.string(),
  exists: z.boolean(),
  sha256: z.string().optional(),
  size: z.number().optional(),
  /** How the agent read it: a static pod manifest, a kubelet environment file, a KubeletConfiguration. */
  kind: z.enum(['static-pod', 'kubelet-env', 'kubelet-config', 'other']).optional(),
  /** The cloud-related flags it holds (CLOUD_FLAGS), after any change; feature gates as `feature-gates`. */
  flags: z.record(z.string(), z.string()).optional(),
  /** Whether this request changed it (or, on a dry run, would). */
  changed: z.boolean().optional(),
  /** Where the original of this run is kept on the host. */
  backup: z.string().optional(),
  /** Unified diff of the change, cut to fit the termination message. */
  diff: z.string().optional(),
});
export type FileReport = z.infer<typeof FileReportSchema>;

/**
 * Why the agent did not run its request at all (nothing on the node was touched): the bundle is not the one
 * the Job names by sha256, or the image has no nsenter on PATH (the launcher's checks); a pre-started agent
 * got no go signal (it could not read it, or none came in time).
 */
export const AgentRefusalSchema = z.enum(['bundle-sha256', 'no-nsenter', 'no-go-signal']);
export type AgentRefusal = z.infer<typeof AgentRefusalSchema>;

export const AgentResultSchema = z.object({
  op: z.string(),
  ok: z.boolean(),
  /** Whether the agent changed anything on the host. */
  changed: z.boolean(),
  /** The agent asks the node to restart kubelet once it has exited. */
  restartKubelet: z.boolean().default(false),
  files: z.array(FileReportSchema).default([]),
  /**
   * translate-cloud-config: the Secret the in-tree config took its credentials from (names only); absent
   * when it names none, and then no copy is needed.
   */
  credentialsSecret: z.object({ name: z.string(), namespace: z.string() }).optional(),
  /**
   * translate-cloud-config: the in-tree config's `[LoadBalancer] use-octavia`, as gcfg reads it; absent when
   * the config does not set it.
   */
  useOctavia: z.boolean().optional(),
  /**
   * inspect: what a kubelet off the in-tree provider would name its Node after: the host's own name and
   * the --hostname-override its flag sources give, if any.
   */
  host: z
    .object({
      hostname: z.string(),
      hostnameOverride: z.string().optional(),
      /** The --node-ip the kubelet starts with after a restart (the CCM narrows its addresses to it). */
      nodeIP: z.string().optional(),
    })
    .optional(),
  /**
   * inspect: every value of the kubelet flags ccm-migrate changes (KUBELET_CHECKED_FLAGS) on the running
   * kubelet's command line (/proc) and in the flag files it edits; absent when no kubelet process runs.
   */
  kubeletFlags: z
    .object({
      running: z.record(z.string(), z.array(z.string())),
      files: z.record(z.string(), z.array(z.string())),
    })
    .optional(),
  /**
   * inspect: the KubeletConfiguration drop-ins of the kubelet's --config-dir (the running kubelet's, else
   * its flag files'), in the order it merges them: the feature gates each sets, or why it cannot be read.
   */
  kubeletDropIns: z
    .array(
      z.object({
        path: z.string(),
        featureGates: z.string().optional(),
        error: z.string().optional(),
      }),
    )
    .optional(),
  /**
   * inspect: what the kubelet pulls images with: its effective credential flags (feature gates, the in-tree
   * ACR config, the plugin config and directory) and, per credential plugin found on the host, its directory.
   */
  imageCredentials: z
    .object({
      flags: z.record(z.string(), z.string()),
      plugins: z.record(z.string(), z.string()),
    })
    .optional(),
  /** inspect with backupsOf: per path that run backed up, the original's sha256 (null: it did not exist). */
  backups: z.record(z.string(), z.string().nullable()).optional(),
  /**
   * read-files: what the kubelet or a static pod names but the agent does not read (it may hold
   * credentials, or is a program): the twin gets a placeholder of that kind.
   */
  withheld: z
    .array(z.object({ path: z.string(), kind: z.enum(['cloud-config', 'credential-plugin']) }))
    .optional(),
  /** read-files with a chunk: part of a file's templated text, and the whole text's sha256 and length. */
  chunk: z
    .object({ path: z.string(), offset: z.int(), text: z.string(), sha256: z.string(), length: z.int() })
    .optional(),
  /** Set by the launcher when it refused to run the agent. */
  refused: AgentRefusalSchema.optional(),
  error: z.string().optional(),
});
export type AgentResult = z.infer<typeof AgentResultSchema>;

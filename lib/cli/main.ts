/**
 * The `ccm-migrate` command. Each subcommand parses its flags (commander gives every one a --help),
 * calls one function, and turns known failures into a one-line message and a documented exit code.
 */
import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { SFNClient } from '@aws-sdk/client-sfn';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { eventsClient } from '../aws/publish.ts';
import { type StackTarget, stackTargetFromOutputs } from '../aws/stack-outputs.ts';
import type { DesiredMode } from '../drift/findings.ts';
import { CcmMigrateError } from '../errors.ts';
import { clientsFromKubeconfigFile } from '../kube/clients.ts';
import type { MigrationKind } from '../local/migration.ts';
import { packageFile, packageVersion } from '../package-root.ts';
import { PROVIDERS, type ProviderId } from '../providers/catalog.ts';
import { CCM_WORKLOADS, type CcmWorkload } from '../providers/ccm-workload.ts';
import { checkImageOverrides, type ImageOverrides } from '../providers/image-overrides.ts';
import { ResourceName, type UpgradeOptions } from '../steps/schemas.ts';
import { defaultStateDir, LocalRunStore } from '../store/local-store.ts';
import { loadTwinSpec, TwinSpecError } from '../twin/spec.ts';
import { TwinStartError } from '../twin/twin.ts';
import { awsApproveCommand } from './approve.ts';
import { awsMigrationCommand, awsStatusCommand } from './aws.ts';
import { demo } from './demo.ts';
import { driftCommand, fleetDriftCommand } from './drift.ts';
import { CliError, EXIT, exitCodeForError } from './exit-codes.ts';
import { imageOption, parseAgentImage } from './image-flag.ts';
import { migrationCommand } from './migration.ts';
import { planCommand } from './plan.ts';
import { providerRows, renderProviders } from './providers.ts';
import { rehearseCommand } from './rehearse.ts';
import { reportCommand, runTableOf } from './report.ts';
import { serveTwin } from './twin-serve.ts';
import { twinSnapshotCommand } from './twin-snapshot.ts';

/** The example twin `npm start` runs: AWS, three control-plane nodes and five workers. */
export const DEFAULT_TWIN_SPEC = packageFile('assets/twins/aws-ha.yaml');

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new InvalidArgumentError('expected a port number 0–65535');
  return n;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 100)
    throw new InvalidArgumentError('expected a whole number 1–100');
  return n;
}

function clusterId(value: string): string {
  if (!ResourceName.safeParse(value).success) {
    throw new InvalidArgumentError(
      'expected lower-case letters, digits and -, at most 63 (it names runs and Jobs)',
    );
  }
  return value;
}

function defaultKubeconfig(): string {
  return process.env.KUBECONFIG?.split(':')[0] || `${process.env.HOME ?? ''}/.kube/config`;
}

/** The flags of every command that works on one cluster. */
interface ClusterFlags {
  clusterId: string;
  kubeconfig?: string;
  context?: string;
  provider?: ProviderId;
  agentImage?: string;
  /** `--image`, on upgrade and plan only. */
  image?: ImageOverrides;
  /** `--ccm-workload`, on upgrade and plan only. */
  ccmWorkload?: CcmWorkload;
}

/** `--ccm-workload`, on upgrade and plan: a downgrade removes the kind its upgrade recorded. */
function ccmWorkloadOption(command: Command): Command {
  return command.addOption(
    new Option(
      '--ccm-workload <kind>',
      'run the CCM as a Deployment with leader election (default) or as a DaemonSet on every control-plane node, as upstream’s AWS and OpenStack manifests do',
    ).choices(CCM_WORKLOADS),
  );
}

function clusterCommand(program: Command, name: string, opts: { fleet?: boolean } = {}): Command {
  const help = 'the cluster’s id in the run store (lower-case letters, digits, -)';
  const command = program.command(name);
  // A command that can also work on a whole fleet takes the cluster id as an option instead.
  opts.fleet
    ? command.option('--cluster-id <id>', help, clusterId)
    : command.requiredOption('--cluster-id <id>', help, clusterId);
  return command
    .option('--kubeconfig <file>', 'kubeconfig of the cluster (default: $KUBECONFIG or ~/.kube/config)')
    .option('--context <name>', 'kubeconfig context (default: the current one)')
    .addOption(
      new Option(
        '--provider <p>',
        'the provider you expect; a cluster that says otherwise is refused',
      ).choices(PROVIDERS),
    )
    .option(
      '--agent-image <image>',
      'image of the node agent Jobs (Node 22 and nsenter; the default is pinned by digest)',
      parseAgentImage,
    );
}

/** The flags that point a command at the deployed stack instead of a kubeconfig. */
interface AwsFlags {
  aws: boolean;
  stackOutputs?: string;
  stateMachineArn?: string;
}

function awsOptions(command: Command, machine: string): Command {
  return command
    .option('--aws', 'run on the deployed stack (Step Functions) instead of in-process', false)
    .option('--stack-outputs <file>', 'with --aws: the file of `npx cdk deploy --outputs-file`')
    .option(
      '--state-machine-arn <arn>',
      `with --aws: the ${machine} state machine (instead of --stack-outputs)`,
    );
}

async function stackTarget(o: AwsFlags, kind?: MigrationKind): Promise<StackTarget> {
  if (o.stateMachineArn) return kind ? { [kind]: o.stateMachineArn } : { upgrade: o.stateMachineArn };
  if (!o.stackOutputs) {
    throw new CliError('--aws needs --stack-outputs <file> or --state-machine-arn <arn>', EXIT.badInput);
  }
  let text: string;
  try {
    text = await readFile(o.stackOutputs, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${o.stackOutputs}: ${(err as Error).message}`, EXIT.badInput);
  }
  return stackTargetFromOutputs(text, o.stackOutputs);
}

function requestId(value: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(value))
    throw new InvalidArgumentError('letters, digits, _ and -, at most 64');
  return value;
}

function pollSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 300) throw new InvalidArgumentError('expected seconds, 0–300');
  return n;
}

/**
 * --provider, --image and --ccm-workload as the run's options. With --provider the overrides are checked
 * against its containers here; without, preflight checks them against the provider it detects.
 */
function targetOptions(o: ClusterFlags): UpgradeOptions {
  if (o.provider) checkImageOverrides(o.provider, o.image);
  return {
    ...(o.provider ? { provider: o.provider } : {}),
    ...(o.image ? { images: o.image } : {}),
    ...(o.ccmWorkload ? { ccmWorkload: o.ccmWorkload } : {}),
  };
}

function clusterTarget(o: ClusterFlags) {
  const options = targetOptions(o);
  return {
    clients: clientsFromKubeconfigFile(o.kubeconfig ?? defaultKubeconfig(), o.context),
    clusterId: o.clusterId,
    options,
    ...(o.agentImage ? { agentImage: o.agentImage } : {}),
  };
}

/** Local-mode flags given with --aws (commander's camelCase keys), refused by their names as typed. */
function refuseWithAws<T extends object>(o: T, keys: ReadonlyArray<keyof T & string>, why: string): void {
  const given = keys.filter((k) => o[k]);
  if (given.length === 0) return;
  const flags = given.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
  throw new CliError(`${flags.join(', ')} do not apply with --aws: ${why}`, EXIT.badInput);
}

/** A report's path, checked before a run: a run of minutes must not end in a report nobody can write. */
async function writableReportPath(out: string): Promise<string> {
  try {
    await access(path.dirname(path.resolve(out)), constants.W_OK);
  } catch {
    throw new CliError(
      `cannot write the report to ${out}: its directory is missing or not writable`,
      EXIT.badInput,
    );
  }
  return out;
}

export function buildProgram(): Command {
  const program = new Command('ccm-migrate')
    .description(
      'Move Kubernetes clusters from in-tree cloud providers to external cloud-controller-managers, and back.',
    )
    .version(packageVersion())
    .showHelpAfterError()
    .exitOverride();

  const twin = program
    .command('twin')
    .description('The cluster twin: a simulated cluster to rehearse migrations on.');
  twin
    .command('serve')
    .description('Run a twin in the foreground; writes DIR/kubeconfig once its API answers. Stops on Ctrl-C.')
    .requiredOption('--spec <file>', 'twin spec (YAML), e.g. assets/twins/aws-ha.yaml')
    .option(
      '--state-dir <dir>',
      'where node files, kubeconfig and invariants.jsonl go (default: a new temp dir)',
    )
    .option('--port <n>', 'API port on 127.0.0.1 (default: a free one)', port)
    .option(
      '--real-api',
      'serve it from a real kube-apiserver and etcd (built by `npm run setup:kube`): HTTPS, client certificates, RBAC, admission',
      false,
    )
    .action(async (o: { spec: string; stateDir?: string; port?: number; realApi: boolean }) => {
      await serveTwin({ ...o, spec: await loadTwinSpec(o.spec) });
    });

  twin
    .command('snapshot')
    .description(
      'Write a twin spec that reproduces a live cluster (nodes, files, objects), read-only: the node agent’s Jobs only read node files, and cloud configs, credential plugins and Secrets become placeholders.',
    )
    .requiredOption(
      '--out <file>',
      'the spec to write (YAML); its host files go to <file without .yaml>.files/',
    )
    .option('--kubeconfig <file>', 'kubeconfig of the cluster (default: $KUBECONFIG or ~/.kube/config)')
    .option('--context <name>', 'kubeconfig context (default: the current one)')
    .option(
      '--agent-image <image>',
      'image of the node agent Jobs (Node 22 and nsenter; the default is pinned by digest)',
      parseAgentImage,
    )
    .action(async (o: { out: string; kubeconfig?: string; context?: string; agentImage?: string }) => {
      await twinSnapshotCommand({
        clients: clientsFromKubeconfigFile(o.kubeconfig ?? defaultKubeconfig(), o.context),
        file: o.out,
        ...(o.agentImage ? { agentImage: o.agentImage } : {}),
      });
    });

  ccmWorkloadOption(imageOption(clusterCommand(program, 'plan')))
    .description(
      'Print exactly what an upgrade would change (a diff per node file and per object); change nothing.',
    )
    .action(async (o: ClusterFlags) => {
      await planCommand(clusterTarget(o));
    });

  const migration = (kind: MigrationKind, description: string): void => {
    const command = clusterCommand(program, kind);
    // A downgrade renders the CCM with the images and the workload kind its upgrade recorded.
    awsOptions(kind === 'upgrade' ? ccmWorkloadOption(imageOption(command)) : command, kind)
      .description(description)
      .option('--max-unavailable <n>', 'kubelets restarted at once', positiveInt, 1)
      .option(
        '--no-leader-migration',
        'hand the cloud controllers between kube-controller-manager and the CCM without the migration lease (upgrade: start the CCM after every kube-controller-manager dropped its provider; downgrade: stop it before they take it back); leader migration is the default with several control-plane nodes on 1.24+',
      )
      .option('--state-dir <dir>', 'run records (default: $CCM_MIGRATE_STATE_DIR or ~/.ccm-migrate)')
      .option('--yes', 'do not ask for confirmation', false)
      .option(
        '--adopt',
        'upgrade: take over CCM objects of the same names that ccm-migrate did not create (preflight refuses them otherwise); the way back then deletes them',
        false,
      )
      .option(
        '--allow-missing-csi',
        'upgrade: go on although the CSI driver of an in-tree volume or StorageClass is not installed or not registered on every node that needs it (preflight refuses otherwise); the run records it',
        false,
      )
      .option(
        '--require-approval',
        'after preflight, wait for an approval before changing anything (with --aws: ccm-migrate approve; locally: asked here, or given by --yes)',
        false,
      )
      .option('--request-id <id>', 'with --aws: the same id again follows the same execution', requestId)
      .option('--poll-interval <s>', 'with --aws: seconds between two looks at the execution', pollSeconds, 5)
      .option(
        '--report <file>',
        'write the run report (HTML: a timeline per node and for the cloud controllers, the summary) there at the end, whatever the outcome',
      )
      .action(
        async (
          o: ClusterFlags &
            AwsFlags & {
              maxUnavailable: number;
              stateDir?: string;
              yes: boolean;
              requestId?: string;
              pollInterval: number;
              leaderMigration: boolean;
              requireApproval: boolean;
              adopt: boolean;
              allowMissingCsi: boolean;
              report?: string;
            },
        ) => {
          if (o.adopt && kind !== 'upgrade') {
            throw new CliError(
              '--adopt applies to upgrades: a downgrade deletes only what is ccm-migrate’s',
              EXIT.badInput,
            );
          }
          if (o.allowMissingCsi && kind !== 'upgrade') {
            throw new CliError('--allow-missing-csi applies to upgrades', EXIT.badInput);
          }
          // Only a --no-leader-migration said out loud overrides the default decision of preflight.
          const options = {
            ...targetOptions(o),
            ...(o.leaderMigration === false ? { leaderMigration: false } : {}),
            ...(o.requireApproval ? { requireApproval: true } : {}),
            ...(o.adopt ? { adopt: true } : {}),
            ...(o.allowMissingCsi ? { allowMissingCsi: true } : {}),
          };
          if (o.aws) {
            refuseWithAws(
              o,
              ['kubeconfig', 'context', 'agentImage', 'stateDir'],
              'the stack reads the kubeconfig from Secrets Manager',
            );
            const sfn = new SFNClient({});
            const target = await stackTarget(o, kind);
            const out = o.report ? await writableReportPath(o.report) : undefined;
            await awsMigrationCommand({
              kind,
              clusterId: o.clusterId,
              sfn,
              events: eventsClient(),
              target,
              maxUnavailable: o.maxUnavailable,
              options,
              yes: o.yes,
              pollMs: o.pollInterval * 1000,
              ...(o.requestId ? { requestId: o.requestId } : {}),
              ...(out
                ? {
                    report: (runId: string) =>
                      reportCommand({
                        aws: true,
                        clusterId: o.clusterId,
                        runId,
                        sfn,
                        target,
                        out,
                        ...runTableOf(target),
                      }),
                  }
                : {}),
            });
            return;
          }
          const stateDir = o.stateDir ?? defaultStateDir();
          const out = o.report ? await writableReportPath(o.report) : undefined;
          await migrationCommand({
            kind,
            ...clusterTarget(o),
            options,
            store: new LocalRunStore(stateDir),
            maxUnavailable: o.maxUnavailable,
            yes: o.yes,
            ...(out
              ? {
                  report: (runId: string) =>
                    reportCommand({ clusterId: o.clusterId, runId, stateDir, out }, process.stdout),
                }
              : {}),
          });
        },
      );
  };
  migration(
    'upgrade',
    'Move one cluster from its in-tree cloud provider to the external CCM (local mode: the same workflow as on AWS, run in-process). Resumes the cluster’s unfinished run; a failed run rolls back what it changed.',
  );
  migration(
    'downgrade',
    'Put one cluster back on its in-tree cloud provider, undoing the last upgrade ccm-migrate ran on it (node files restored byte for byte from its backups, the CCM removed). Resumes an unfinished downgrade.',
  );

  ccmWorkloadOption(imageOption(clusterCommand(program, 'rehearse')))
    .description(
      'Rehearse the migration on a twin of the cluster: snapshot it (read-only), ask its preflight what it refuses (plan), then plan, upgrade and downgrade the twin in-process and report each step, each node file change and the invariants. Exit 0 only when the rehearsal migrated and came back clean.',
    )
    .option('--max-unavailable <n>', 'kubelets restarted at once', positiveInt, 1)
    .option(
      '--no-leader-migration',
      'hand the cloud controllers over without the migration lease (as upgrade --no-leader-migration)',
    )
    .option(
      '--state-dir <dir>',
      'the twin’s node files and the rehearsal’s run records (default: a new temp dir)',
    )
    .option('--real-api', 'run the twin on a real kube-apiserver (built by `npm run setup:kube`)', false)
    .action(
      async (
        o: ClusterFlags & {
          maxUnavailable: number;
          leaderMigration: boolean;
          stateDir?: string;
          realApi: boolean;
        },
      ) => {
        const target = clusterTarget(o);
        await rehearseCommand({
          ...target,
          options: { ...target.options, ...(o.leaderMigration === false ? { leaderMigration: false } : {}) },
          maxUnavailable: o.maxUnavailable,
          realApi: o.realApi,
          ...(o.stateDir ? { stateDir: o.stateDir } : {}),
        });
      },
    );

  clusterCommand(program, 'drift', { fleet: true })
    .description(
      'Check one cluster against what it should be (external or in-tree): control-plane and kubelet flags, the CCM, stuck nodes, kubeadm-config, leftovers. Read-only (shallow); --deep also reads every kubelet through the node agent.',
    )
    .addOption(
      new Option(
        '--expect <mode>',
        'what the cluster should be (default: from its last run in the store)',
      ).choices(['external', 'in-tree']),
    )
    .option('--deep', 'also read every node’s kubelet flags through the node agent (one Job per node)', false)
    .option(
      '--remediate',
      'with --deep --expect external: flip each kubelet found on the in-tree provider (a node that joined from an old template) as the upgrade does, then check again',
      false,
    )
    .option('--max-unavailable <n>', 'with --remediate: kubelets restarted at once', positiveInt, 1)
    .option('--json', 'print the report as JSON', false)
    .option('--state-dir <dir>', 'run records (default: $CCM_MIGRATE_STATE_DIR or ~/.ccm-migrate)')
    .addOption(
      new Option(
        '--registry <file>',
        'check every cluster of this fleet file (YAML/JSON: clusterId, provider, desiredMode, kubeconfig path) instead of one',
      ).conflicts(['clusterId', 'kubeconfig', 'context', 'expect']),
    )
    .option('--concurrency <n>', 'with --registry: clusters checked at once', positiveInt, 10)
    .action(
      async (
        o: ClusterFlags & {
          expect?: DesiredMode;
          deep: boolean;
          remediate: boolean;
          maxUnavailable: number;
          json: boolean;
          stateDir?: string;
          registry?: string;
          concurrency: number;
        },
      ) => {
        if (o.registry) {
          if (o.remediate) {
            throw new CliError(
              '--remediate works on one cluster: with --registry, a cluster’s policy (autoRemediate) says whether its drift is remediated',
              EXIT.badInput,
            );
          }
          await fleetDriftCommand({
            registry: o.registry,
            store: new LocalRunStore(o.stateDir ?? defaultStateDir()),
            deep: o.deep,
            json: o.json,
            concurrency: o.concurrency,
            ...(o.agentImage ? { agentImage: o.agentImage } : {}),
          });
          return;
        }
        if (!o.clusterId) throw new CliError('--cluster-id or --registry is required', EXIT.badInput);
        const target = clusterTarget(o);
        await driftCommand({
          clients: target.clients,
          clusterId: o.clusterId,
          store: new LocalRunStore(o.stateDir ?? defaultStateDir()),
          deep: o.deep,
          json: o.json,
          ...(o.remediate ? { remediate: { maxUnavailable: o.maxUnavailable } } : {}),
          ...(o.expect ? { expect: o.expect } : {}),
          ...(o.provider ? { provider: o.provider } : {}),
          ...(o.agentImage ? { agentImage: o.agentImage } : {}),
        });
      },
    );

  awsOptions(
    program
      .command('report')
      .description(
        'Write one run as a self-contained HTML report: a timeline (a lane per node and one for the cloud controllers: each step, restart, wait and who held the cloud loops), the summary (outcome, duration against its lower bound, API requests, state transitions) and each node’s files as hashes and cloud flags.',
      )
      .requiredOption('--cluster-id <id>', 'the cluster’s id in the run store', clusterId)
      .option('--run-id <id>', 'the run (default: the cluster’s latest)', clusterId)
      .option('--state-dir <dir>', 'run records (default: $CCM_MIGRATE_STATE_DIR or ~/.ccm-migrate)')
      .option(
        '--twin-dir <dir>',
        'on a twin: its state dir, whose invariant monitor’s intervals are overlaid',
      )
      .option(
        '--twin-spec <file>',
        'on a twin: its spec, whose latencies give the lower bound as the benchmark does',
      )
      .requiredOption('--out <file>', 'where to write the HTML'),
    'upgrade or downgrade',
  ).action(
    async (
      o: AwsFlags & {
        clusterId: string;
        runId?: string;
        stateDir?: string;
        twinDir?: string;
        twinSpec?: string;
        out: string;
      },
    ) => {
      if (o.aws) {
        refuseWithAws(
          o,
          ['stateDir', 'twinDir', 'twinSpec'],
          'the report reads the execution and the stack’s run table',
        );
        const target = await stackTarget(o);
        await reportCommand({
          aws: true,
          clusterId: o.clusterId,
          sfn: new SFNClient({}),
          target,
          out: await writableReportPath(o.out),
          ...(o.runId ? { runId: o.runId } : {}),
          ...runTableOf(target),
        });
        return;
      }
      await reportCommand({
        clusterId: o.clusterId,
        stateDir: o.stateDir ?? defaultStateDir(),
        out: await writableReportPath(o.out),
        ...(o.runId ? { runId: o.runId } : {}),
        ...(o.twinDir ? { twinDir: o.twinDir } : {}),
        ...(o.twinSpec ? { latencies: (await loadTwinSpec(o.twinSpec)).latencies } : {}),
      });
    },
  );

  awsOptions(
    program
      .command('status')
      .description('List one cluster’s upgrade and downgrade runs on the deployed stack, newest first.')
      .requiredOption('--cluster-id <id>', 'the cluster’s id', clusterId),
    'upgrade or downgrade',
  ).action(async (o: AwsFlags & { clusterId: string }) => {
    if (!o.aws) {
      throw new CliError('status lists runs on the deployed stack: pass --aws', EXIT.badInput);
    }
    await awsStatusCommand({ clusterId: o.clusterId, sfn: new SFNClient({}), target: await stackTarget(o) });
  });

  awsOptions(
    program
      .command('approve')
      .description(
        'Answer the approval gate of a cluster’s upgrade (or with --downgrade, downgrade) on the deployed stack (started with --require-approval, or by a stack that requires approval): the run goes on, or with --reject ends before any change.',
      )
      .option('--downgrade', 'answer a downgrade’s gate, not an upgrade’s', false)
      .requiredOption('--cluster-id <id>', 'the cluster’s id', clusterId)
      .option(
        '--run-id <id>',
        'the run to answer (default: the cluster’s running upgrade or downgrade)',
        clusterId,
      )
      .option('--reject', 'reject: the run ends failed, the cluster unchanged', false)
      .option('--reason <text>', 'with --reject: why (the run’s cause, in its history and events)'),
    'upgrade',
  ).action(
    async (
      o: AwsFlags & {
        clusterId: string;
        runId?: string;
        reject: boolean;
        reason?: string;
        downgrade: boolean;
      },
    ) => {
      if (!o.aws)
        throw new CliError('approve answers a run on the deployed stack: pass --aws', EXIT.badInput);
      if (o.reason !== undefined && !o.reject)
        throw new CliError('--reason goes with --reject', EXIT.badInput);
      const kind = o.downgrade ? 'downgrade' : 'upgrade';
      await awsApproveCommand({
        clusterId: o.clusterId,
        kind,
        sfn: new SFNClient({}),
        target: await stackTarget(o, kind),
        ...(o.runId ? { runId: o.runId } : {}),
        ...(o.reject ? { reject: { reason: o.reason ?? 'rejected with ccm-migrate approve --reject' } } : {}),
      });
    },
  );

  program
    .command('providers')
    .description(
      'List the provider catalog: in-tree name, the version that removed it, CCM images per Kubernetes minor.',
    )
    .option('--json', 'print the catalog as JSON', false)
    .action((o: { json: boolean }) => {
      const rows = providerRows();
      process.stdout.write(o.json ? `${JSON.stringify(rows, null, 2)}\n` : renderProviders(rows));
    });

  program
    .command('demo')
    .description(
      'The default job (`npm start`): start the example AWS twin, upgrade it to the external CCM end to end, print the summary and the invariants, stop.',
    )
    .option('--spec <file>', 'twin spec to use instead of the example', DEFAULT_TWIN_SPEC)
    .option('--state-dir <dir>', 'state dir (default: a new temp dir)')
    .option('--max-unavailable <n>', 'worker kubelets restarted at once', positiveInt, 2)
    .option('--real-api', 'run the twin on a real kube-apiserver (built by `npm run setup:kube`)', false)
    .action(async (o: { spec: string; stateDir?: string; maxUnavailable: number; realApi: boolean }) => {
      await demo({ ...o, spec: await loadTwinSpec(o.spec) });
    });

  return program;
}

/** Exit code for a failure, and the line to print. */
function explain(err: unknown): { code: number; message: string } {
  if (err instanceof CommanderError)
    return { code: err.exitCode === 0 ? EXIT.ok : EXIT.badInput, message: '' };
  if (err instanceof CliError) return { code: err.exitCode, message: err.message };
  if (err instanceof TwinSpecError) return { code: EXIT.badInput, message: err.message };
  if (err instanceof TwinStartError) return { code: EXIT.failed, message: err.message };
  if (err instanceof CcmMigrateError)
    return { code: exitCodeForError(err.name), message: `${err.name}: ${err.message}` };
  const message = err instanceof Error ? err.message : String(err);
  return {
    code: EXIT.failed,
    message: `unexpected failure: ${message} (set CCM_MIGRATE_DEBUG=1 for details)`,
  };
}

export async function main(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    const { code, message } = explain(err);
    if (message) process.stderr.write(`ccm-migrate: ${message}\n`);
    if (process.env.CCM_MIGRATE_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    return code;
  }
}

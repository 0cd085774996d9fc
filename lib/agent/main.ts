/**
 * The agent on a real node, as the Job's container runs it (`node /opt/ccm-migrate/agent.mjs`): the
 * request from the environment, the host's `/` at /host, the answer in the termination log. The kubelet is
 * restarted last, from the host's namespaces, once the answer is written: the restarted kubelet then
 * reports the finished container with it. A flip's answer then says what the restarted kubelet runs.
 */
import { execFile } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { awaitGoSignal, type GoSignalOptions } from './go-signal.ts';
import { failure, withRestartedKubelet } from './ops/report.ts';
import { AGENT_GO_ENV, AGENT_REQUEST_ENV, type AgentResult, TERMINATION_LOG_ENV } from './protocol.ts';
import { fitResult, runAgent } from './run.ts';

export const HOST_ROOT_ENV = 'CCM_MIGRATE_AGENT_HOST_ROOT';
/** Where the host's processes show (the pod has hostPID, so its own /proc does); moved only by tests. */
export const PROC_ENV = 'CCM_MIGRATE_AGENT_PROC';

/** systemd's kubelet, from the host's mount, UTS, IPC, network and PID namespaces (the pod has hostPID). */
export const RESTART_KUBELET_COMMAND: readonly string[] = [
  'nsenter',
  '--target',
  '1',
  '--mount',
  '--uts',
  '--ipc',
  '--net',
  '--pid',
  '--',
  'systemctl',
  'restart',
  'kubelet',
];

/**
 * The host's name as its kubelet reads it (uname's nodename): from the host's UTS namespace, since the
 * Job's pod has a name of its own.
 */
export const HOSTNAME_COMMAND: readonly string[] = [
  'nsenter',
  '--target',
  '1',
  '--uts',
  '--',
  'cat',
  '/proc/sys/kernel/hostname',
];

/** The host's kubelet process, its pid and command line: the first process named `kubelet`. */
export async function kubeletProcess(proc: string): Promise<{ pid: string; argv: string[] } | undefined> {
  const pids = (await readdir(proc)).filter((p) => /^\d+$/.test(p)).sort((a, b) => Number(a) - Number(b));
  for (const pid of pids) {
    try {
      if ((await readFile(`${proc}/${pid}/comm`, 'utf8')).trim() !== 'kubelet') continue;
      const cmdline = await readFile(`${proc}/${pid}/cmdline`, 'utf8');
      return { pid, argv: cmdline.split('\0').filter((w, i, all) => w !== '' || i < all.length - 1) };
    } catch {
      // The process ended while we looked.
    }
  }
  return undefined;
}

/** The command line of the host's kubelet process, program first. */
export async function kubeletCommandLine(proc: string): Promise<string[] | undefined> {
  return (await kubeletProcess(proc))?.argv;
}

/**
 * How long the agent looks for the restarted kubelet's process: `systemctl restart` of kubeadm's unit
 * (Type=simple) returns once the new process is forked, so it shows at once; one that exits on its flags
 * is started again by systemd after RestartSec=10 s.
 */
export const RESTARTED_KUBELET_WAIT_MS = 15_000;
const RESTARTED_KUBELET_POLL_MS = 100;

/**
 * The answer with the restarted kubelet's flags in place of the old process's: a kubelet process other than
 * `before`. None within RESTARTED_KUBELET_WAIT_MS: the flags are left out, and the orchestrator inspects
 * the node once it is Ready instead.
 */
async function withRestartedFlags(result: AgentResult, proc: string, before?: string): Promise<AgentResult> {
  if (!result.kubeletFlags) return result;
  const until = Date.now() + RESTARTED_KUBELET_WAIT_MS;
  for (;;) {
    const now = await kubeletProcess(proc);
    if (now && now.pid !== before) return withRestartedKubelet(result, now.argv);
    if (Date.now() >= until) {
      const { kubeletFlags: _, ...rest } = result;
      return rest;
    }
    await new Promise((resolve) => setTimeout(resolve, RESTARTED_KUBELET_POLL_MS));
  }
}

/** Run a command; its standard output. */
export type RunCommand = (command: readonly string[]) => Promise<string>;

const runCommand: RunCommand = async ([file, ...args]) =>
  (await promisify(execFile)(file as string, args, { timeout: 120_000 })).stdout;

async function answer(env: NodeJS.ProcessEnv, run: RunCommand): Promise<AgentResult> {
  let request: unknown;
  try {
    request = JSON.parse(env[AGENT_REQUEST_ENV] ?? '');
  } catch {
    return failure('unknown', `invalid agent request: ${AGENT_REQUEST_ENV} is not set to JSON`);
  }
  return runAgent(request, {
    hostRoot: env[HOST_ROOT_ENV] ?? '/host',
    hostname: async () => (await run(HOSTNAME_COMMAND)).trim(),
    kubeletCommandLine: () => kubeletCommandLine(env[PROC_ENV] ?? '/proc'),
  });
}

/** The request's op, as far as it can be read, for an answer given without running it. */
function requestOp(env: NodeJS.ProcessEnv): string {
  try {
    const op = (JSON.parse(env[AGENT_REQUEST_ENV] ?? '') as { op?: unknown } | null)?.op;
    return typeof op === 'string' ? op : 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Run the request of `env`; the process exit code: 0 when the answer is ok. A pre-started agent
 * (AGENT_GO_ENV set) first waits for its go signal and, without one, refuses having touched nothing.
 */
export async function agentMain(
  env: NodeJS.ProcessEnv = process.env,
  run: RunCommand = runCommand,
  goSignal?: GoSignalOptions,
): Promise<number> {
  const log = env[TERMINATION_LOG_ENV] ?? '/dev/termination-log';
  const proc = env[PROC_ENV] ?? '/proc';
  if (env[AGENT_GO_ENV] !== undefined) {
    const signal = await awaitGoSignal(env, goSignal);
    if (!signal.go) {
      const refused: AgentResult = {
        op: requestOp(env),
        ok: false,
        changed: false,
        restartKubelet: false,
        files: [],
        refused: 'no-go-signal',
        error: signal.error,
      };
      await writeFile(log, JSON.stringify(fitResult(refused)));
      return 1;
    }
  }
  let result = await answer(env, run);
  await writeFile(log, JSON.stringify(result));
  if (result.restartKubelet) {
    const before = result.kubeletFlags ? (await kubeletProcess(proc))?.pid : undefined;
    try {
      await run(RESTART_KUBELET_COMMAND);
      result = fitResult(await withRestartedFlags(result, proc, before));
    } catch (err) {
      const why = (err as Error).message.split('\n')[0]?.slice(0, 200);
      result = fitResult({ ...result, ok: false, error: `restarting the kubelet failed: ${why}` });
    }
    await writeFile(log, JSON.stringify(result));
  }
  return result.ok ? 0 : 1;
}

/** Whether this file (or the bundle made of it) is the process's entry; a ConfigMap mount is a symlink. */
function isEntry(): boolean {
  try {
    const entry = process.argv[1];
    return entry !== undefined && realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntry()) process.exitCode = await agentMain();

/**
 * The `ccm-migrate` command. Each subcommand parses its flags (commander gives every one a --help),
 * calls one function, and turns known failures into a one-line message and a documented exit code.
 */
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { loadTwinSpec, TwinSpecError } from '../twin/spec.ts';
import { TwinStartError } from '../twin/twin.ts';
import { CliError, EXIT } from './exit-codes.ts';
import { serveTwin } from './twin-serve.ts';

/** The example twin `npm start` runs: AWS, three control-plane nodes and five workers. */
export const DEFAULT_TWIN_SPEC = fileURLToPath(new URL('../../assets/twins/aws-ha.yaml', import.meta.url));

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new InvalidArgumentError('expected a port number 0–65535');
  return n;
}

export function buildProgram(): Command {
  const program = new Command('ccm-migrate')
    .description(
      'Move Kubernetes clusters from in-tree cloud providers to external cloud-controller-managers, and back.',
    )
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
    .action(async (o: { spec: string; stateDir?: string; port?: number }) => {
      await serveTwin({ ...o, spec: await loadTwinSpec(o.spec) });
    });

  program
    .command('demo')
    .description(
      'The default job (`npm start`): serve the example AWS twin and show how to reach it with kubectl.',
    )
    .option('--spec <file>', 'twin spec to use instead of the example', DEFAULT_TWIN_SPEC)
    .option('--state-dir <dir>', 'state dir (default: a new temp dir)')
    .action(async (o: { spec: string; stateDir?: string }) => {
      await serveTwin({ ...o, spec: await loadTwinSpec(o.spec) });
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

/**
 * cfn-lint, AWS's CloudFormation linter (installed by `npm run setup:cfn-lint`), over the synthesized stack:
 * no error, and no warning but those cdk/cfn-lint.ts acknowledges with its reason. Without the linter the
 * test is left out with a line saying so; under CCM_MIGRATE_CI=1 (.ci/run, which installs it) it fails.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { CFN_LINT } from '../../tools/cfn-lint/venv.ts';
import { testStack } from './stack.ts';

const run = promisify(execFile);

const FindingsSchema = z.array(
  z.looseObject({
    Level: z.string(),
    Message: z.string(),
    Rule: z.looseObject({ Id: z.string() }),
    Location: z.looseObject({ Path: z.array(z.union([z.string(), z.number()])) }),
  }),
);

function cfnLintRuns(): boolean {
  if (existsSync(CFN_LINT) || process.env.CCM_MIGRATE_CI === '1') return true;
  console.warn(
    'cfn-lint test left out: cfn-lint is not installed (run `npm run setup:cfn-lint` to include it)',
  );
  return false;
}

let dir: string | undefined;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** cfn-lint's findings on a template, as `Rule Level Path: Message` lines. */
async function lint(template: unknown): Promise<string[]> {
  if (!existsSync(CFN_LINT)) throw new Error(`no ${CFN_LINT}: run \`npm run setup:cfn-lint\``);
  dir ??= await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-cfn-lint-'));
  const file = path.join(dir, 'template.json');
  await writeFile(file, JSON.stringify(template));
  // Its exit status is a bit mask of the levels found; the findings themselves are what the test reads.
  const stdout = await run(CFN_LINT, ['--format', 'json', '--', file], { maxBuffer: 16 * 1024 * 1024 }).then(
    (r) => r.stdout,
    (err: { stdout?: string; code?: unknown }) => {
      if (typeof err.code !== 'number' || !err.stdout) throw err;
      return err.stdout;
    },
  );
  return FindingsSchema.parse(JSON.parse(stdout)).map(
    (f) => `${f.Rule.Id} ${f.Level} ${f.Location.Path.join('/')}: ${f.Message}`,
  );
}

type Template = { Resources: Record<string, { Type: string; Metadata?: Record<string, unknown> }> };

describe.runIf(cfnLintRuns())('cfn-lint', () => {
  let synthesized: Template;
  beforeAll(() => {
    const { app, stack } = testStack();
    synthesized = app.synth().getStackByName(stack.stackName).template;
  });

  it('finds nothing in the synthesized stack but what cdk/cfn-lint.ts acknowledges', async () => {
    expect(await lint(synthesized)).toEqual([]);
  });

  it('finds an unacknowledged warning (so the check above can fail)', async () => {
    const template = structuredClone(synthesized);
    const [id, machine] = Object.entries(template.Resources).find(
      ([, r]) => r.Type === 'AWS::StepFunctions::StateMachine',
    ) ?? ['', undefined];
    if (machine) delete machine.Metadata?.['cfn-lint'];
    expect(await lint(template)).toEqual([
      expect.stringMatching(new RegExp(`^W3005 Warning Resources/${id}/`)),
    ]);
  });
});

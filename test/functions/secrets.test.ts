/**
 * The kubeconfig never leaves Secrets Manager's answer: whole migrations on the twin (an upgrade that fails
 * and rolls back, one that succeeds, a downgrade) with every step's event, result and error, every engine
 * event, every progress line, every run-store file, and the Lambda handlers' log lines and errors
 * (successful, failing, unreachable and malformed kubeconfigs) captured and scanned for the kubeconfig's
 * token and text.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { clusterStepHandler } from '../../lib/aws/step-handlers.ts';
import { storeStepHandler } from '../../lib/aws/store-step-handler.ts';
import { progressPrinter } from '../../lib/cli/migration.ts';
import type { LocalRunOptions } from '../../lib/local/engine.ts';
import { recordFailure } from '../../lib/steps/finalize.ts';
import { STEPS } from '../../lib/steps/index.ts';
import { FailureEventSchema } from '../../lib/steps/schemas.ts';
import { UPGRADE_STATES } from '../../state-machines/upgrade.ts';
import { type E2E, startE2E } from '../e2e/harness.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { capturedLogger } from './captured-logger.ts';
import { LAMBDA_CONTEXT } from './lambda-context.ts';

/** Everything that left a step or the engine, as JSON text or lines. */
const seen: string[] = [];
const record = (what: string, value: unknown) => {
  seen.push(`${what} ${typeof value === 'string' ? value : JSON.stringify(value)}`);
};

// Every step handler of the local engine wrapped: its event in, its result or error out.
vi.mock('../../lib/local/engine.ts', async (importOriginal) => {
  const engine = await importOriginal<typeof import('../../lib/local/engine.ts')>();
  return {
    ...engine,
    runLocally: (opts: LocalRunOptions) =>
      engine.runLocally({
        ...opts,
        handlers: Object.fromEntries(
          Object.entries(opts.handlers).map(([step, handler]) => [
            step,
            async (event: unknown) => {
              record(`event ${step}`, event);
              try {
                const result = await handler(event);
                record(`result ${step}`, result ?? null);
                return result;
              } catch (err) {
                const e = err as Error;
                record(`error ${step}`, { name: e.name, message: e.message, stack: e.stack });
                throw err;
              }
            },
          ]),
        ) as LocalRunOptions['handlers'],
      }),
  };
});

const secrets = mockClient(SecretsManagerClient);
let e2e: E2E;
let kubeconfig: string;
let token: string;

beforeAll(async () => {
  e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini));
  kubeconfig = await readFile(e2e.t.twin.kubeconfigPath, 'utf8');
  token = (parse(kubeconfig) as { users: { user: { token: string } }[] }).users[0]?.user.token ?? '';
});
afterAll(async () => {
  await e2e?.stop();
});

function lineWriter(lines: string[]): NodeJS.WritableStream {
  return new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(await readFile(path.join(entry.parentPath, entry.name), 'utf8'));
  }
  return out;
}

function expectNoSecret(texts: string[]): void {
  expect(token).toMatch(/^[0-9a-f]{32}$/);
  for (const text of texts) {
    expect(text).not.toContain(token);
    expect(text).not.toContain(kubeconfig.trim());
  }
}

it('shows the kubeconfig in no step event, result, error, engine event, progress line or store file', async () => {
  const { t } = e2e;
  const printed: string[] = [];
  const printer = progressPrinter(lineWriter(printed));
  const capture = {
    onEvent: (event: Parameters<typeof printer.onEvent>[0]) => {
      record('engine', event);
      printer.onEvent(event);
      // The first upgrade fails while starting the CCM and rolls back; the rollback is let through.
      if (event.type === 'StateEntered' && event.state.name === UPGRADE_STATES.activate && failing) {
        t.twin.faults.add({ kind: 'error', rate: 1, code: 500, verb: 'patch', resource: 'deployments' });
      }
      if (event.type === 'StateEntered' && event.state.name === UPGRADE_STATES.rollbackKubelets) {
        t.twin.faults.clear('error');
        failing = false;
      }
    },
    onProgress: printer.onProgress,
  };
  let failing = true;

  const rolledBack = await e2e.upgrade(capture);
  expect(rolledBack.error?.name).toBe('RolledBack');
  const upgraded = await e2e.upgrade(capture);
  expect(upgraded.status).toBe('SUCCEEDED');
  const downgraded = await e2e.downgrade(capture);
  expect(downgraded.status).toBe('SUCCEEDED');
  for (const result of [rolledBack, upgraded, downgraded]) record('run', result);

  // What was captured is the whole run: every step ran through the wrapper, errors included.
  expect(seen.some((s) => s.startsWith('error '))).toBe(true);
  expect(seen.filter((s) => s.startsWith('event preflight '))).toHaveLength(2);
  expect(seen.some((s) => s.startsWith('result restore-kubelet '))).toBe(true);
  expect(printed.length).toBeGreaterThan(20);
  const storeFiles = await filesUnder(e2e.store.dir);
  expect(storeFiles.length).toBeGreaterThanOrEqual(3);
  const records = await e2e.store.list(t.twin.spec.name);
  expect(records.map((r) => r.status)).toEqual(['rolled-back', 'succeeded', 'succeeded']);

  expectNoSecret([...seen, ...printed, ...storeFiles, JSON.stringify(records)]);
});

it("keeps it out of the Lambda handlers' log lines and errors, whatever the secret holds", async () => {
  const logs: string[] = [];
  const errors: string[] = [];
  const deps = {
    store: () => e2e.store,
    registry: () => ({ get: async () => undefined }),
    logger: capturedLogger(logs),
  };
  const fails = async (promise: Promise<unknown>) => {
    const err = (await promise.then(
      () => undefined,
      (e: unknown) => e,
    )) as Error | undefined;
    expect(err?.name).toBe('InvalidInput');
    errors.push(`${err?.name} ${err?.message} ${err?.stack}`);
  };

  secrets.on(GetSecretValueCommand).resolves({ SecretString: kubeconfig });
  await clusterStepHandler(
    'preflight',
    STEPS.preflight,
    deps,
  )({ clusterId: e2e.t.twin.spec.name, runId: 'up-lambda-1', options: {} }, LAMBDA_CONTEXT);
  await clusterStepHandler(
    'stage-ccm',
    STEPS['stage-ccm'],
    deps,
  )({ clusterId: e2e.t.twin.spec.name, runId: 'up-lambda-1' }, LAMBDA_CONTEXT);
  await storeStepHandler(
    'record-failure',
    FailureEventSchema,
    recordFailure,
    deps,
  )(
    { clusterId: e2e.t.twin.spec.name, runId: 'up-lambda-1', error: { Error: 'AgentFailed', Cause: 'boom' } },
    LAMBDA_CONTEXT,
  );
  // A secret that is not a kubeconfig any more, around the token: the parser's complaint must not quote it.
  secrets.on(GetSecretValueCommand).resolves({ SecretString: `${kubeconfig}\n  - : [${token}` });
  await fails(
    clusterStepHandler(
      'preflight',
      STEPS.preflight,
      deps,
    )({ clusterId: e2e.t.twin.spec.name, runId: 'up-lambda-3', options: {} }, LAMBDA_CONTEXT),
  );

  expect(logs.filter((l) => l.includes('"message":"done"')).length).toBeGreaterThanOrEqual(3);
  expect(logs.filter((l) => l.includes('"errorName"'))).toHaveLength(1);
  expectNoSecret([...logs, ...errors, ...(await filesUnder(e2e.store.dir))]);
});

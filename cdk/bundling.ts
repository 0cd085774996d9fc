/**
 * How every function is bundled: one description that the stack gives NodejsFunction and the bundle
 * benchmark gives esbuild directly, so the benchmark measures what is deployed.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { aws_lambda_nodejs as nodejs } from 'aws-cdk-lib';
import type { BuildOptions } from 'esbuild';
import { ESM_REQUIRE_BANNER } from '../lib/agent/bundle.ts';
import { moduleUrl, packageRoot } from '../lib/package-root.ts';
import { DRIFT_STEP_IDS, STEP_IDS, type StepId } from '../state-machines/steps.ts';

/** The clone, or the installed package (whose code is under dist/). */
export const PROJECT_ROOT = packageRoot();

const LOCK_FILE = path.join(PROJECT_ROOT, 'package-lock.json');

/**
 * Where NodejsFunction bundles from: the clone, with its lock file; installed (npm leaves the lock file out
 * of a package), the app that depends on ccm-migrate, whose lock file NodejsFunction finds from the
 * working directory and whose node_modules hold our dependencies.
 */
export const BUNDLING_PROJECT: Pick<nodejs.NodejsFunctionProps, 'projectRoot' | 'depsLockFilePath'> =
  existsSync(LOCK_FILE) ? { projectRoot: PROJECT_ROOT, depsLockFilePath: LOCK_FILE } : {};

/** Functions besides the steps: the MigrationRequested starter and the run-ended handler. */
export const EVENT_FUNCTIONS = ['starter', 'run-ended'] as const;
export type FunctionId = StepId | (typeof EVENT_FUNCTIONS)[number];
export const FUNCTION_IDS: readonly FunctionId[] = [...STEP_IDS, ...DRIFT_STEP_IDS, ...EVENT_FUNCTIONS];

/** The steps that only record in the run store: no cluster access, no VPC, no Kubernetes client. */
export const STORE_ONLY_STEPS: readonly StepId[] = ['finalize', 'record-failure', 'record-rollback'];

/** Whether a function talks to Kubernetes (and so runs the node agent and needs the cluster's secret). */
export function talksToCluster(id: FunctionId): boolean {
  if (id === 'check-drift' || id === 'remediate-drift') return true;
  return (STEP_IDS as readonly string[]).includes(id) && !STORE_ONLY_STEPS.includes(id as StepId);
}

/** A function's handler module: TypeScript in the clone, the built JavaScript in the installed package. */
export function entryOf(id: FunctionId): string {
  return fileURLToPath(moduleUrl(import.meta.url, `../functions/${id}`));
}

/**
 * The AWS SDK v3 is in the Node 22 runtime; Powertools comes from its layer (powertools-layer.ts); esbuild
 * is imported only to build the agent when no prebuilt bundle is shipped, which never happens in Lambda.
 */
export const EXTERNAL_MODULES = ['@aws-sdk/*', '@aws-lambda-powertools/*', 'esbuild'];

export const ESBUILD_SETTINGS = {
  minify: true,
  sourcemap: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  mainFields: ['module', 'main'],
  banner: ESM_REQUIRE_BANNER,
  external: EXTERNAL_MODULES,
} as const;

/** The same settings as options of esbuild's own `build()`: what the benchmarks and tests bundle with. */
export const ESBUILD_BUILD_OPTIONS: BuildOptions = {
  ...ESBUILD_SETTINGS,
  bundle: true,
  logLevel: 'silent',
  mainFields: [...ESBUILD_SETTINGS.mainFields],
  banner: { js: ESBUILD_SETTINGS.banner },
  external: [...ESBUILD_SETTINGS.external],
};

export function bundlingFor(id: FunctionId): nodejs.BundlingOptions {
  return {
    forceDockerBundling: false,
    minify: ESBUILD_SETTINGS.minify,
    sourceMap: ESBUILD_SETTINGS.sourcemap,
    format: nodejs.OutputFormat.ESM,
    target: ESBUILD_SETTINGS.target,
    mainFields: [...ESBUILD_SETTINGS.mainFields],
    banner: ESBUILD_SETTINGS.banner,
    externalModules: [...ESBUILD_SETTINGS.external],
    ...(talksToCluster(id)
      ? {
          commandHooks: {
            beforeBundling: () => [],
            beforeInstall: () => [],
            // The node that runs the synth builds the agent: no esbuild CLI on PATH needed.
            afterBundling: (_inputDir: string, outputDir: string) => [
              `"${process.execPath}" "${fileURLToPath(moduleUrl(import.meta.url, './function-files'))}" "${outputDir}"`,
            ],
          },
        }
      : {}),
  };
}

/**
 * Drift checks over the fleet, on a schedule: list the registry, check every cluster (a Distributed Map,
 * `maxConcurrency` clusters at once, from the input), publish DriftDetected (and a remediation request where
 * a cluster's policy says so) for each drifted one, flip its kubelets back where that is all its critical
 * drift and its policy asks (lib/drift/remediate-step.ts), then sum up.
 *
 * A cluster never fails the fleet run: its check retries throttling and an unreachable API (the step
 * Tasks' retry policies), and every failure left is caught and reported as `unknown`. A failed publish
 * keeps the cluster `drifted` and says so.
 *
 * One definition for both engines: Step Functions runs the Map as a Distributed Map (a child execution per
 * cluster, items from `$.clusters`); the local engine runs the same ASL's Map over the same items in-process.
 * JSONPath only (HOUSE-STYLE 7).
 *
 * Input: FleetDriftInputSchema (lib/drift/steps.ts): `{ runId, depth, maxConcurrency }`.
 */
import { Duration, aws_stepfunctions as sfn } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { StepTaskFactory } from './steps.ts';

export const DRIFT_STATES = {
  list: 'List the clusters',
  clusters: 'Check every cluster',
  check: 'Check a cluster',
  drifted: 'Has it drifted?',
  publish: 'Publish the drift',
  publishFailed: 'Note the failed publish',
  remediateKubelets: 'Are its kubelets to be flipped back?',
  remediate: 'Flip the kubelets back to external',
  remediationFailed: 'Note the failed remediation',
  unknown: 'Mark it unknown',
  done: 'Cluster checked',
  summarize: 'Sum up the fleet',
  succeeded: 'Fleet checked',
} as const;

/**
 * A Task of the branch whose failure is noted in the cluster's summary (`notePath`: the error's name) rather
 * than failing the cluster: its check stands.
 */
function noteFailure(
  scope: Construct,
  opts: {
    task: sfn.TaskStateBase;
    noteName: string;
    errorPath: string;
    notePath: string;
    done: sfn.IChainable;
  },
): sfn.TaskStateBase {
  const noted = new sfn.Pass(scope, opts.noteName, {
    stateName: opts.noteName,
    parameters: { 'error.$': `${opts.errorPath}.Error` },
    resultPath: opts.notePath,
  }).next(opts.done);
  return opts.task.addCatch(noted, { errors: [sfn.Errors.ALL], resultPath: opts.errorPath });
}

/** Per item, the Map's state is `{ clusterId, runId, depth }`; the branch leaves the summary in `$.drift`. */
function perCluster(scope: Construct, stepTask: StepTaskFactory): sfn.IChainable {
  const S = DRIFT_STATES;
  const done = new sfn.Pass(scope, S.done, { stateName: S.done, outputPath: '$.drift' });
  // The error's name only: a Lambda's Cause carries its stack trace, and a fleet-wide outage would put one
  // per cluster into the 256 KB state. The step reports what it can explain itself (see checkClusterDrift).
  const unknown = new sfn.Pass(scope, S.unknown, {
    stateName: S.unknown,
    parameters: {
      'clusterId.$': '$.clusterId',
      status: 'unknown',
      counts: { critical: 0, warning: 0, info: 0 },
      findings: [],
      'error.$': '$.error.Error',
    },
    resultPath: '$.drift',
  }).next(done);
  const check = stepTask(scope, {
    stateName: S.check,
    step: 'check-drift',
    payload: sfn.TaskInput.fromObject({
      'clusterId.$': '$.clusterId',
      'runId.$': '$.runId',
      'depth.$': '$.depth',
    }),
    resultPath: '$.drift',
  }).addCatch(unknown, { errors: [sfn.Errors.ALL], resultPath: '$.error' });
  const publish = noteFailure(scope, {
    task: stepTask(scope, {
      stateName: S.publish,
      step: 'publish-drift',
      payload: sfn.TaskInput.fromObject({ 'runId.$': '$.runId', 'summary.$': '$.drift' }),
      resultPath: sfn.JsonPath.DISCARD,
    }),
    noteName: S.publishFailed,
    errorPath: '$.publishError',
    notePath: '$.drift.publishFailed',
    done,
  });
  // The check says `remediation: kubelets` only where the cluster's record asks for it (remediate-step.ts).
  const remediate = noteFailure(scope, {
    task: stepTask(scope, {
      stateName: S.remediate,
      step: 'remediate-drift',
      payload: sfn.TaskInput.fromObject({ 'clusterId.$': '$.clusterId', 'runId.$': '$.runId' }),
      resultPath: '$.drift.remediated',
    }),
    noteName: S.remediationFailed,
    errorPath: '$.remediationError',
    notePath: '$.drift.remediationFailed',
    done,
  });
  remediate.next(done);
  publish.next(
    new sfn.Choice(scope, S.remediateKubelets, { stateName: S.remediateKubelets })
      .when(
        sfn.Condition.and(
          sfn.Condition.isPresent('$.drift.remediation'),
          sfn.Condition.stringEquals('$.drift.remediation', 'kubelets'),
        ),
        remediate,
      )
      .otherwise(done),
  );
  return check.next(
    new sfn.Choice(scope, S.drifted, { stateName: S.drifted })
      .when(sfn.Condition.stringEquals('$.drift.status', 'drifted'), publish)
      .otherwise(done),
  );
}

export function driftDefinition(scope: Construct, stepTask: StepTaskFactory): sfn.DefinitionBody {
  const S = DRIFT_STATES;
  const list = stepTask(scope, {
    stateName: S.list,
    step: 'list-clusters',
    payload: sfn.TaskInput.fromObject({}),
    resultPath: '$.clusters',
  });
  const clusters = new sfn.DistributedMap(scope, S.clusters, {
    stateName: S.clusters,
    itemsPath: '$.clusters',
    itemSelector: {
      'clusterId.$': '$$.Map.Item.Value',
      'runId.$': '$.runId',
      'depth.$': '$.depth',
    },
    maxConcurrencyPath: '$.maxConcurrency',
    resultPath: '$.results',
  });
  clusters.itemProcessor(perCluster(scope, stepTask));
  const summarize = stepTask(scope, {
    stateName: S.summarize,
    step: 'summarize-drift',
    payload: sfn.TaskInput.fromObject({ 'runId.$': '$.runId', 'results.$': '$.results' }),
    resultPath: '$.summary',
  });
  return sfn.DefinitionBody.fromChainable(
    list
      .next(clusters)
      .next(summarize)
      .next(new sfn.Succeed(scope, S.succeeded, { stateName: S.succeeded })),
  );
}

/** A fleet run's limit: every cluster's check and retries, maxConcurrency at a time. */
export const DRIFT_TIMEOUT = Duration.hours(1);

/**
 * The metrics ccm-migrate's functions emit besides Lambda's and Step Functions' own, shared by the code that
 * emits them and the alarms and dashboard in cdk/monitoring.ts.
 */
export const METRIC_NAMESPACE = 'ccm-migrate';

export const METRICS = {
  /** One per ended execution (run-ended), dimensions Kind and Outcome. */
  runsEnded: 'RunsEnded',
  /** One per failed step invocation other than a wait (metric filter on the functions' log lines). */
  stepErrors: 'StepErrors',
  /**
   * One per drifted cluster a drift check finds (check-drift), without dimensions: counted where the drift is
   * seen, so that a failed DriftDetected publish still raises the alarm.
   */
  clustersDrifted: 'ClustersDrifted',
} as const;

export const RUN_OUTCOMES = ['succeeded', 'failed', 'rolled-back'] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

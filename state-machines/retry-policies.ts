/**
 * Retry policies shared by the state machines, by error name (lib/errors.ts). Each comment works out the
 * worst-case wait so that a run's length stays bounded.
 */
import { Duration, aws_stepfunctions as sfn } from 'aws-cdk-lib';
import { ERROR_NAMES } from '../lib/errors.ts';

/**
 * A step that waited its bounded time inside the invocation (≤ 60 s) and is still waiting.
 * Intervals 5, 7.5, 11.3, 16.9, 25.3, 38, 57, 85.4 s: ≈ 4.1 min of pauses + 8 × 60 s of in-step waiting,
 * so a step gives up after ≈ 12 min.
 */
export const WAIT_FOR_CLUSTER: sfn.RetryProps = {
  errors: [ERROR_NAMES.notReadyYet],
  interval: Duration.seconds(5),
  backoffRate: 1.5,
  maxAttempts: 8,
};

/**
 * A step cut by its invocation's deadline (lib/kube/deadline.ts) before Lambda's timeout: it was getting on,
 * and being idempotent it resumes where it stopped. Intervals 1, 2, 4 s: 3 more invocations of at most
 * 5 min (STEP_TIMEOUT_MS), so a step that keeps being cut gives up after ≈ 20 min in all.
 */
export const RESUME_AFTER_DEADLINE: sfn.RetryProps = {
  errors: [ERROR_NAMES.deadlineReached],
  interval: Duration.seconds(1),
  backoffRate: 2,
  maxAttempts: 3,
};

/**
 * The API throttled (429/5xx) or vanished (a single control-plane cluster restarting its API server).
 * Intervals 2, 4, 8, 16, 32, 64 s with full jitter: at most ≈ 2.1 min.
 */
export const TRANSIENT_API: sfn.RetryProps = {
  errors: [ERROR_NAMES.kubeApiThrottled, ERROR_NAMES.clusterUnreachable],
  interval: Duration.seconds(2),
  backoffRate: 2,
  maxAttempts: 6,
  jitterStrategy: sfn.JitterType.FULL,
};

/** Every retry policy a step Task gets, most specific first. */
export const STEP_RETRIES: readonly sfn.RetryProps[] = [
  WAIT_FOR_CLUSTER,
  RESUME_AFTER_DEADLINE,
  TRANSIENT_API,
];

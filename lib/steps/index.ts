/**
 * Every step by its id, with the schema its event is parsed with (lib/steps/definition.ts): what the local
 * engine calls. A Lambda function takes its own step's definition only.
 */
import type * as z from 'zod';
import type { DriftStepId, StepId } from '../../state-machines/steps.ts';
import { CheckDriftEventSchema, checkClusterDrift } from '../drift/check-step.ts';
import { RemediateDriftEventSchema, remediateDrift } from '../drift/remediate-step.ts';
import {
  type DriftStepContext,
  ListClustersEventSchema,
  listClusters,
  PublishDriftEventSchema,
  publishDrift,
  SummarizeDriftEventSchema,
  summarizeDrift,
} from '../drift/steps.ts';
import { activateCcm, stageCcm } from './ccm.ts';
import type { StepContext } from './context.ts';
import { runDefinition, type StepDefinition, step } from './definition.ts';
import { downgradePreflight } from './downgrade-preflight.ts';
import { finalize, recordFailure, recordRollback } from './finalize.ts';
import { flipKubelet, moveControlPlaneNode } from './nodes.ts';
import { preflight } from './preflight.ts';
import { removeCcm, restoreControlPlaneNode, restoreKubelet, stopCcm, verifyInTree } from './restore.ts';
import {
  ActivateEventSchema,
  FailureEventSchema,
  FinalizeEventSchema,
  NodeEventSchema,
  PreflightEventSchema,
  RestoreEventSchema,
  RestoreNodeEventSchema,
  RunIds,
} from './schemas.ts';
import { verify } from './verify.ts';
import { verifyNode } from './verify-node.ts';

/** What each step runs with: one cluster's context for a migration step, the fleet's for a drift step. */
export type ContextOf<K extends StepId> = K extends DriftStepId ? DriftStepContext : StepContext;

export const STEPS: { readonly [K in StepId]: StepDefinition<z.ZodType, ContextOf<K>> } = {
  preflight: step(PreflightEventSchema, preflight),
  'stage-ccm': step(RunIds, stageCcm),
  'move-control-plane-node': step(NodeEventSchema, moveControlPlaneNode),
  'activate-ccm': step(ActivateEventSchema, activateCcm),
  'flip-kubelet': step(NodeEventSchema, flipKubelet),
  'verify-node': step(NodeEventSchema, verifyNode),
  verify: step(RunIds, verify),
  finalize: step(FinalizeEventSchema, finalize),
  'record-failure': step(FailureEventSchema, recordFailure),
  'downgrade-preflight': step(PreflightEventSchema, downgradePreflight),
  'restore-kubelet': step(RestoreNodeEventSchema, restoreKubelet),
  'stop-ccm': step(RestoreEventSchema, stopCcm),
  'restore-control-plane-node': step(RestoreNodeEventSchema, restoreControlPlaneNode),
  'remove-ccm': step(RestoreEventSchema, removeCcm),
  'verify-in-tree': step(RestoreEventSchema, verifyInTree),
  'record-rollback': step(FailureEventSchema, recordRollback),
  'list-clusters': step(ListClustersEventSchema, listClusters),
  'check-drift': step(CheckDriftEventSchema, checkClusterDrift),
  'publish-drift': step(PublishDriftEventSchema, publishDrift),
  'remediate-drift': step(RemediateDriftEventSchema, remediateDrift),
  'summarize-drift': step(SummarizeDriftEventSchema, summarizeDrift),
};

/** Parse the event with the step's schema and run it. */
export async function runStep<K extends StepId>(id: K, event: unknown, ctx: ContextOf<K>): Promise<unknown> {
  return runDefinition(id, STEPS[id] as StepDefinition<z.ZodType, ContextOf<K>>, event, ctx);
}

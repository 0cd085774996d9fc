/**
 * The workload side of a cluster's control plane: kube-scheduler and the kube-controller-manager loops for
 * Deployments, DaemonSets, Jobs (with TTL after finished), pod garbage collection and the node lifecycle
 * controller's condition taints. Like real controllers
 * they share one informer cache fed by the store's events, and each reacts through its own work queue.
 */
import type { TwinContext } from '../context.ts';
import type { KubeObject, StoreEvent } from '../store.ts';
import { WorkloadCache } from './cache.ts';
import { DaemonSetController } from './daemonsets.ts';
import { DeploymentController } from './deployments.ts';
import { EventRecorder } from './events.ts';
import { JobController } from './jobs.ts';
import { NodeConditionTaints } from './node-taints.ts';
import { PodGarbageCollector } from './pod-gc.ts';
import { Scheduler } from './scheduler.ts';

export interface WorkloadControllers {
  stop(): Promise<void>;
}

interface Controller {
  start(): void;
  stop(): void;
  observe(event: StoreEvent, previous: KubeObject | undefined): void;
}

export function startWorkloadControllers(ctx: TwinContext): WorkloadControllers {
  const cache = new WorkloadCache();
  const events = new EventRecorder(ctx.store);
  const controllers: Controller[] = [
    new Scheduler(ctx, cache, events),
    new DeploymentController(ctx, cache, events),
    new DaemonSetController(ctx, cache, events),
    new JobController(ctx, cache, events),
    new PodGarbageCollector(ctx, cache),
    new NodeConditionTaints(ctx, cache),
  ];
  // Listing and subscribing in the same turn leaves no gap for an event to fall into.
  cache.load(ctx.store);
  const unsubscribe = ctx.store.subscribe((event) => {
    const previous = cache.apply(event);
    for (const c of controllers) c.observe(event, previous);
  });
  for (const c of controllers) c.start();

  const stop = (): void => {
    unsubscribe();
    for (const c of controllers) c.stop();
  };
  ctx.signal.addEventListener('abort', stop, { once: true });
  return {
    stop: async () => {
      ctx.signal.removeEventListener('abort', stop);
      stop();
    },
  };
}

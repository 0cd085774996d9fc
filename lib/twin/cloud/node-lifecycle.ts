/**
 * The cloud-node-lifecycle controller (k8s.io/cloud-provider/controllers/nodelifecycle), run by whichever
 * controller manager runs the cloud loops with it enabled (its `--controllers`): every monitor period it
 * deletes each node that is not Ready and whose instance the cloud says it does not have (by providerID, or
 * by name when it has none), with a DeletingNode event. A lookup that fails otherwise (an unauthorized
 * cloud) skips the node until the next period (MonitorNodes logs it and goes on). Only NotReady nodes are
 * looked at, so a period costs what the NotReady nodes cost.
 */
import type { TwinContext } from '../context.ts';
import type { StoreEvent } from '../store.ts';
import { recordEvent } from './events.ts';
import type { CloudModel } from './model.ts';
import { type LookupSide, lookupInstance } from './node-init.ts';
import { hasUninitializedTaint, nodeReady, providerIDOf } from './nodes.ts';

/** An uninitialized node without a providerID gets this long to be initialised (uninitializedNodeDelay). */
const UNINITIALIZED_NODE_DELAY_MS = 60_000;

export class CloudNodeLifecycleController {
  readonly #ctx: TwinContext;
  readonly #cloud: CloudModel;
  readonly #notReady = new Set<string>();

  constructor(ctx: TwinContext, cloud: CloudModel) {
    this.#ctx = ctx;
    this.#cloud = cloud;
  }

  observe(event: StoreEvent): void {
    const name = event.object.metadata.name;
    if (event.type === 'DELETED' || nodeReady(event.object)) this.#notReady.delete(name);
    else this.#notReady.add(name);
  }

  /** One MonitorNodes pass, by a controller whose lookups are `by`'s. */
  monitor(by: LookupSide, now = Date.now()): void {
    const store = this.#ctx.store;
    for (const name of this.#notReady) {
      const node = store.tryGet('nodes', undefined, name);
      if (!node || nodeReady(node)) continue;
      const created = Date.parse(node.metadata.creationTimestamp ?? '');
      if (!providerIDOf(node) && hasUninitializedTaint(node) && now - created < UNINITIALIZED_NODE_DELAY_MS) {
        continue;
      }
      if (lookupInstance(this.#ctx, this.#cloud, node, by) !== 'notFound') continue;
      recordEvent(store, node, {
        type: 'Normal',
        reason: 'DeletingNode',
        message: `Deleting node ${name} because it does not exist in the cloud provider`,
        component: 'cloud-node-lifecycle-controller',
      });
      try {
        store.delete('nodes', undefined, name);
      } catch (err) {
        recordEvent(store, node, {
          type: 'Warning',
          reason: 'DeletingNodeFailed',
          message: `Failed deleting node ${name}: ${(err as Error).message}`,
          component: 'cloud-node-lifecycle-controller',
        });
      }
    }
  }
}

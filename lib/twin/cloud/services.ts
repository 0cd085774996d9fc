/**
 * The service (LoadBalancer) controller, run by whichever controller manager runs the cloud loops
 * (k8s.io/cloud-provider/controllers/service): a Service of type LoadBalancer without a
 * spec.loadBalancerClass gets the cleanup finalizer and a load balancer, whose address goes to
 * status.loadBalancer.ingress; when the Service goes, or stops being a LoadBalancer, the controller
 * deletes the load balancer, clears the status and drops the finalizer.
 * The load balancer's address is derived from the Service's uid, as the providers name load balancers after
 * it (cloudprovider.DefaultLoadBalancerName), so KCM and CCM report the same ingress for the same Service.
 */
import { createHash } from 'node:crypto';
import type { TwinContext } from '../context.ts';
import type { Provider } from '../spec.ts';
import type { KubeObject } from '../store.ts';
import { recordEvent } from './events.ts';

/** servicehelper.LoadBalancerCleanupFinalizer */
export const LB_FINALIZER = 'service.kubernetes.io/load-balancer-cleanup';

export interface LoadBalancerIngress {
  readonly ip?: string;
  readonly hostname?: string;
}

interface ServiceSpec {
  type?: string;
  loadBalancerClass?: string;
}

/** `a` + the uid without dashes, at most 32 characters (cloudprovider.DefaultLoadBalancerName). */
function loadBalancerName(uid: string): string {
  return `a${uid.replaceAll('-', '')}`.slice(0, 32);
}

function ipFrom(hash: Buffer, prefix: string): string {
  const octets = prefix.split('.').length;
  const rest = [...hash.subarray(0, 4 - octets)].map((b) => (b % 253) + 1);
  return [prefix, ...rest].join('.');
}

/**
 * The ingress the provider's load balancer reports, shaped like the real ones: AWS classic ELB
 * `<name>-<digits>.<region>.elb.amazonaws.com` (NLB `<name>-<hex>.elb.<region>.amazonaws.com`), IBM VPC
 * `<hex>-<region>.lb.appdomain.cloud`, public IPs on Azure and GCE, floating IPs on OpenStack, and an
 * NSX VIP on vSphere.
 */
export function loadBalancerIngress(
  provider: Provider,
  region: string,
  service: KubeObject,
): LoadBalancerIngress {
  const uid = service.metadata.uid ?? `${service.metadata.namespace}/${service.metadata.name}`;
  const hash = createHash('sha256').update(uid).digest();
  const name = loadBalancerName(uid);
  switch (provider) {
    case 'aws': {
      const nlb =
        service.metadata.annotations?.['service.beta.kubernetes.io/aws-load-balancer-type'] === 'nlb';
      return nlb
        ? { hostname: `${name}-${hash.toString('hex').slice(0, 16)}.elb.${region}.amazonaws.com` }
        : { hostname: `${name}-${hash.readUInt32BE(0) % 10_000_000_000}.${region}.elb.amazonaws.com` };
    }
    case 'ibm':
      return { hostname: `${hash.toString('hex').slice(0, 8)}-${region}.lb.appdomain.cloud` };
    case 'azure':
      return { ip: ipFrom(hash, '20') };
    case 'gce':
      return { ip: ipFrom(hash, '34') };
    case 'openstack':
      return { ip: ipFrom(hash, '172.24.4') };
    case 'vsphere':
      return { ip: ipFrom(hash, '192.168.200') };
  }
}

function wantsLoadBalancer(service: KubeObject): boolean {
  const spec = (service.spec ?? {}) as ServiceSpec;
  return spec.type === 'LoadBalancer' && !spec.loadBalancerClass && !service.metadata.deletionTimestamp;
}

function hasFinalizer(service: KubeObject): boolean {
  return service.metadata.finalizers?.includes(LB_FINALIZER) ?? false;
}

function ingressOf(service: KubeObject): unknown {
  return (service.status as { loadBalancer?: { ingress?: unknown } } | undefined)?.loadBalancer?.ingress;
}

export class ServiceController {
  readonly #ctx: TwinContext;
  readonly #provider: Provider;
  readonly #region: string;

  constructor(ctx: TwinContext, provider: Provider, region: string) {
    this.#ctx = ctx;
    this.#provider = provider;
    this.#region = region;
  }

  /** Whether this Service needs the controller: a load balancer to ensure, or one to clean up. */
  needsSync(service: KubeObject): boolean {
    if (wantsLoadBalancer(service)) {
      const want = [loadBalancerIngress(this.#provider, this.#region, service)];
      return !hasFinalizer(service) || JSON.stringify(ingressOf(service)) !== JSON.stringify(want);
    }
    return hasFinalizer(service);
  }

  sync(namespace: string, name: string): void {
    const service = this.#ctx.store.tryGet('services', namespace, name);
    if (!service || !this.needsSync(service)) return;
    if (wantsLoadBalancer(service)) this.#ensure(service);
    else this.#cleanUp(service);
  }

  #ensure(service: KubeObject): void {
    const store = this.#ctx.store;
    let current = service;
    if (!hasFinalizer(current)) {
      const next = structuredClone(current);
      next.metadata.finalizers = [...(next.metadata.finalizers ?? []), LB_FINALIZER];
      current = store.update('services', next);
    }
    this.#event(current, 'EnsuringLoadBalancer', 'Ensuring load balancer');
    const ingress = [loadBalancerIngress(this.#provider, this.#region, current)];
    current = store.update(
      'services',
      { ...structuredClone(current), status: { loadBalancer: { ingress } } },
      { subresource: 'status' },
    );
    this.#event(current, 'EnsuredLoadBalancer', 'Ensured load balancer');
  }

  #cleanUp(service: KubeObject): void {
    const store = this.#ctx.store;
    this.#event(service, 'DeletingLoadBalancer', 'Deleting load balancer');
    let current = service;
    if (!current.metadata.deletionTimestamp && ingressOf(current) !== undefined) {
      current = store.update(
        'services',
        { ...structuredClone(current), status: { loadBalancer: {} } },
        { subresource: 'status' },
      );
    }
    const next = structuredClone(current);
    const finalizers = (next.metadata.finalizers ?? []).filter((f) => f !== LB_FINALIZER);
    if (finalizers.length > 0) next.metadata.finalizers = finalizers;
    else delete next.metadata.finalizers;
    // Without finalizers left, a Service being deleted goes now.
    store.update('services', next);
    this.#event(current, 'DeletedLoadBalancer', 'Deleted load balancer');
  }

  #event(service: KubeObject, reason: string, message: string): void {
    recordEvent(this.#ctx.store, service, {
      type: 'Normal',
      reason,
      message,
      component: 'service-controller',
    });
  }
}

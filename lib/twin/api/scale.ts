/**
 * The `scale` subresource of Deployments (autoscaling/v1 Scale), what `kubectl scale` and autoscalers use:
 * GET shows spec.replicas, status.replicas and the selector as a string; PUT and PATCH (merge, strategic,
 * JSON) change the Deployment's spec.replicas and nothing else. See
 * https://kubernetes.io/docs/reference/kubernetes-api/autoscaling/horizontal-pod-autoscaler-v1/#Scale.
 */
import { badRequest, invalid, staleConflict } from '../errors.ts';
import { patchTypeOf } from '../patch/index.ts';
import { applyJsonPatch } from '../patch/json-patch.ts';
import { mergePatchValue } from '../patch/merge-patch.ts';
import type { ResourceType } from '../resources.ts';
import type { KubeObject, ObjectStore } from '../store.ts';
import { decodeBody, objectBodyFormat } from './body.ts';

interface Scaled extends KubeObject {
  spec?: { replicas?: number; selector?: { matchLabels?: Record<string, string> } };
  status?: { replicas?: number };
}

function scaleOf(d: Scaled): KubeObject {
  const { name, namespace, uid, resourceVersion, creationTimestamp } = d.metadata;
  const selector = Object.entries(d.spec?.selector?.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return {
    apiVersion: 'autoscaling/v1',
    kind: 'Scale',
    metadata: { name, namespace, uid, resourceVersion, creationTimestamp },
    spec: { replicas: d.spec?.replicas ?? 1 },
    status: { replicas: d.status?.replicas ?? 0, selector },
  };
}

export function serveScale(opts: {
  store: ObjectStore;
  type: ResourceType;
  namespace: string;
  name: string;
  method: string;
  contentType: string | undefined;
  body: Buffer;
}): { code: number; body: KubeObject } {
  const key = `${opts.type.plural}.${opts.type.group}`;
  const current = opts.store.get(key, opts.namespace, opts.name) as Scaled;
  if (opts.method === 'GET') return { code: 200, body: scaleOf(current) };
  let wanted: KubeObject;
  if (opts.method === 'PUT') {
    wanted = decodeBody(opts.body, objectBodyFormat(opts.contentType)) as KubeObject;
    const rv = wanted.metadata?.resourceVersion;
    if (rv && rv !== current.metadata.resourceVersion) throw staleConflict(opts.type, opts.name);
  } else {
    const patchType = patchTypeOf(opts.contentType);
    const patch = decodeBody(opts.body, 'json', { allowArray: patchType === 'json' });
    const scale = scaleOf(current);
    if (patchType === 'json') wanted = applyJsonPatch(scale, patch) as KubeObject;
    else if (patchType === 'merge' || patchType === 'strategic')
      wanted = mergePatchValue(scale, patch) as KubeObject;
    else throw badRequest(`the scale subresource takes JSON, merge and strategic merge patches`);
  }
  const replicas = (wanted as Scaled).spec?.replicas;
  if (typeof replicas !== 'number' || replicas < 0) {
    throw invalid({ group: 'autoscaling', plural: 'scales', kind: 'Scale' }, opts.name, [
      { field: 'spec.replicas', message: `Invalid value: ${replicas}: must be greater than or equal to 0` },
    ]);
  }
  const next = { ...current, spec: { ...current.spec, replicas } };
  return { code: 200, body: scaleOf(opts.store.update(key, next) as Scaled) };
}

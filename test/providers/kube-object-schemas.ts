/**
 * Every object ccm-migrate renders, checked against the Kubernetes OpenAPI schema of its kind, with the
 * validators kubernetes-models compiles from that schema (Kubernetes v1.36). A test helper: the renderer is
 * deterministic over inputs its zod schema checks, so the tests hold every provider's objects to it, and the
 * functions do not carry the validators. The kinds we
 * render are all GA, and a GA kind's schema only gains optional fields from one minor to the next, so this
 * one schema covers every minor the catalog supports. What it cannot see (a field newer than the cluster,
 * an unknown field: the schemas allow extra fields) the API server refuses on server-side apply.
 *
 * One module per kind is imported, never the package root (≈ 0.6 s to load all kinds).
 */

import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret } from 'kubernetes-models/v1/Secret';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { InvalidInputError } from '../../lib/errors.ts';

/** The schema's Kubernetes version (kubernetes-models 5.x). */
export const SCHEMA_KUBERNETES_VERSION = 'v1.36.0';

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: never) => Validatable;

const MODELS: Readonly<Record<string, ModelClass>> = {
  'v1/ServiceAccount': ServiceAccount as unknown as ModelClass,
  'v1/Secret': Secret as unknown as ModelClass,
  'v1/ConfigMap': ConfigMap as unknown as ModelClass,
  'apps/v1/Deployment': Deployment as unknown as ModelClass,
  'apps/v1/DaemonSet': DaemonSet as unknown as ModelClass,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole as unknown as ModelClass,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding as unknown as ModelClass,
  'rbac.authorization.k8s.io/v1/Role': Role as unknown as ModelClass,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding as unknown as ModelClass,
};

interface ObjectLike {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name?: string; readonly namespace?: string };
}

/** The library's errors: ajv's, each with the field's JSON pointer and the rule broken (never the value). */
interface SchemaErrors {
  readonly errors?: readonly { readonly instancePath?: string; readonly message?: string }[];
}

/**
 * Refuse an object its kind's schema does not accept: InvalidInputError naming the object, the field and
 * the rule, for every object at fault. A kind without a schema here is a renderer bug, not bad input.
 */
export function validateKubeObjects(objects: readonly ObjectLike[]): void {
  const problems: string[] = [];
  for (const object of objects) {
    const Model = MODELS[`${object.apiVersion}/${object.kind}`];
    if (!Model) throw new Error(`no OpenAPI schema for ${object.apiVersion} ${object.kind}`);
    try {
      new Model(object as never).validate();
    } catch (err) {
      const where = `${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata.name}`;
      const errors = (err as SchemaErrors).errors ?? [];
      const what = errors.length
        ? errors.map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`).join('; ')
        : 'does not match its schema';
      problems.push(`${where}: ${what}`);
    }
  }
  if (problems.length > 0) {
    throw new InvalidInputError(
      `rendered objects the Kubernetes ${SCHEMA_KUBERNETES_VERSION} OpenAPI schema refuses: ${problems.join('; ')}`,
    );
  }
}

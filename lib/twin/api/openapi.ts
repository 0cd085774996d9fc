/**
 * A minimal OpenAPI v3 (`/openapi/v3`, `/openapi/v3/<api|apis/group>/<version>`): the paths of each
 * resource with the PATCH operation's query parameters and its x-kubernetes-group-version-kind, and no
 * schemas. That is what kubectl reads to decide that the server validates fields itself
 * (k8s.io/kubectl/pkg/util/openapi … query_param_verifier_v3.go: a PATCH operation of the GVK listing
 * `fieldValidation`): without it, kubectl apply/create fall back to client-side validation, which needs the
 * full /openapi/v2 schemas and fails. With no schemas here, client-side apply computes strategic merge
 * patches from kubectl's built-in types, as it does for any GVK missing from the document.
 */
import { createHash } from 'node:crypto';
import { RESOURCE_TYPES, type ResourceType } from '../resources.ts';

/** `api/v1` or `apis/<group>/<version>`: the key of a group version in the OpenAPI v3 root. */
function gvPath(t: Pick<ResourceType, 'group' | 'version'>): string {
  return t.group === '' ? `api/${t.version}` : `apis/${t.group}/${t.version}`;
}

const query = (name: string, description: string) => ({
  name,
  in: 'query',
  description,
  schema: { type: 'string' },
});

/** The PATCH parameters of the real document (operation patchCoreV1NamespacedPod and the like). */
const PATCH_PARAMETERS = [
  query('dryRun', 'When present, indicates that modifications should not be persisted.'),
  query(
    'fieldManager',
    'fieldManager is a name associated with the actor or entity that is making these changes.',
  ),
  query(
    'fieldValidation',
    'fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.',
  ),
  { ...query('force', 'Force is going to "force" Apply requests.'), schema: { type: 'boolean' } },
];

function groupVersionDocument(gv: string, kubernetesVersion: string): object {
  const paths: Record<string, object> = {};
  for (const t of RESOURCE_TYPES.filter((r) => gvPath(r) === gv)) {
    const base = `/${gv}${t.namespaced ? '/namespaces/{namespace}' : ''}/${t.plural}/{name}`;
    const gvk = { group: t.group, version: t.version, kind: t.kind };
    for (const path of [base, ...t.subresources.map((s) => `${base}/${s}`)]) {
      paths[path] = {
        patch: {
          operationId: `patch${t.kind}`,
          parameters: PATCH_PARAMETERS,
          'x-kubernetes-action': 'patch',
          'x-kubernetes-group-version-kind': gvk,
        },
      };
    }
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: kubernetesVersion },
    paths,
    components: { schemas: {} },
  };
}

const GROUP_VERSIONS = [...new Set(RESOURCE_TYPES.map(gvPath))];

export interface OpenApi {
  /** `/openapi/v3`: where each group version's document is. */
  readonly root: object;
  /** The document of `api/v1` or `apis/<group>/<version>`, if served. */
  document(gv: string): object | undefined;
}

export function openApi(kubernetesVersion: string): OpenApi {
  const docs = new Map(GROUP_VERSIONS.map((gv) => [gv, groupVersionDocument(gv, kubernetesVersion)]));
  const hash = (doc: object) =>
    createHash('sha512').update(JSON.stringify(doc)).digest('hex').slice(0, 128).toUpperCase();
  const paths = Object.fromEntries(
    [...docs].map(([gv, doc]) => [gv, { serverRelativeURL: `/openapi/v3/${gv}?hash=${hash(doc)}` }]),
  );
  return { root: { paths }, document: (gv) => docs.get(gv) };
}

/**
 * Discovery documents, built from RESOURCE_TYPES: /version, /api (APIVersions), /apis (APIGroupList),
 * /api/v1 and /apis/<group>/<version> (APIResourceList), and the aggregated form (apidiscovery.k8s.io/v2
 * APIGroupDiscoveryList) that kubectl asks for first, which saves it one request per group version.
 * Shapes: k8s.io/apimachinery/pkg/apis/meta/v1 types.go and k8s.io/api/apidiscovery/v2 types.go.
 */
import { apiVersionOf, RESOURCE_TYPES, type ResourceType } from '../resources.ts';
import { ACCESS_REVIEW } from './access-review.ts';

/** What a subresource answers with: a Scale for `scale`, the type's own kind otherwise. */
function subresourceKind(t: ResourceType, sub: string): { group: string; version: string; kind: string } {
  return sub === 'scale'
    ? { group: 'autoscaling', version: 'v1', kind: 'Scale' }
    : { group: t.group, version: t.version, kind: t.kind };
}

/** SelfSubjectAccessReview: served (create only), stored nowhere. */
const REVIEW_RESOURCE = {
  name: ACCESS_REVIEW.plural,
  singularName: 'selfsubjectaccessreview',
  namespaced: false,
  kind: ACCESS_REVIEW.kind,
  verbs: ['create'],
};

/** `GET /version`: a version.Info, as `kubectl version` prints it. */
export function versionInfo(kubernetesVersion: string): Record<string, string> {
  const [major = '1', minor = '0'] = kubernetesVersion.replace(/^v/, '').split('.');
  return {
    major,
    minor,
    gitVersion: kubernetesVersion,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '1970-01-01T00:00:00Z',
    goVersion: 'go1.22.0',
    compiler: 'gc',
    platform: `linux/${process.arch === 'arm64' ? 'arm64' : 'amd64'}`,
  };
}

export function apiVersions(serverAddress: string): object {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

/** The named groups (not the core group), in the order their types are declared. */
function groups(): Map<string, ResourceType[]> {
  const byGroup = new Map<string, ResourceType[]>();
  for (const t of RESOURCE_TYPES) {
    if (t.group === '') continue;
    byGroup.set(t.group, [...(byGroup.get(t.group) ?? []), t]);
  }
  return byGroup;
}

export function apiGroupList(): object {
  const review = {
    groupVersion: `${ACCESS_REVIEW.group}/${ACCESS_REVIEW.version}`,
    version: ACCESS_REVIEW.version,
  };
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [
      ...[...groups()].map(([name, types]) => {
        const versions = [...new Set(types.map((t) => t.version))].map((version) => ({
          groupVersion: `${name}/${version}`,
          version,
        }));
        return { name, versions, preferredVersion: versions[0] };
      }),
      { name: ACCESS_REVIEW.group, versions: [review], preferredVersion: review },
    ],
  };
}

function typesOf(group: string, version: string): ResourceType[] {
  return RESOURCE_TYPES.filter((t) => t.group === group && t.version === version);
}

/** Verbs of a `status` subresource, as the real server lists `pods/status`. */
const SUBRESOURCE_VERBS = ['get', 'patch', 'update'];

export function apiResourceList(group: string, version: string): object {
  const reviews = group === ACCESS_REVIEW.group && version === ACCESS_REVIEW.version ? [REVIEW_RESOURCE] : [];
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: apiVersionOf({ group, version }),
    resources: [
      ...reviews,
      ...typesOf(group, version).flatMap((t) => [
        {
          name: t.plural,
          singularName: t.singular,
          namespaced: t.namespaced,
          kind: t.kind,
          verbs: t.verbs,
          ...(t.shortNames.length ? { shortNames: t.shortNames } : {}),
        },
        ...t.subresources.map((sub) => {
          const { group: g, version: v, kind } = subresourceKind(t, sub);
          return {
            name: `${t.plural}/${sub}`,
            singularName: '',
            namespaced: t.namespaced,
            ...(sub === 'scale' ? { group: g, version: v } : {}),
            kind,
            verbs: SUBRESOURCE_VERBS,
          };
        }),
      ]),
    ],
  };
}

/** The media type of aggregated discovery, which a client asks for in Accept and must get back verbatim. */
export const AGGREGATED_DISCOVERY_TYPE =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** Whether the Accept header asks for aggregated discovery v2 (client-go lists it before plain JSON). */
export function wantsAggregated(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((part) => {
    const params = part.split(';').map((p) => p.trim());
    return (
      params.includes('g=apidiscovery.k8s.io') &&
      params.includes('v=v2') &&
      params.includes('as=APIGroupDiscoveryList')
    );
  });
}

function discoveryGroup(name: string, types: readonly ResourceType[]): object {
  const versions = [...new Set(types.map((t) => t.version))];
  return {
    metadata: { name },
    versions: versions.map((version) => ({
      version,
      resources: types
        .filter((t) => t.version === version)
        .map((t) => {
          const responseKind = { group: t.group, version: t.version, kind: t.kind };
          return {
            resource: t.plural,
            responseKind,
            scope: t.namespaced ? 'Namespaced' : 'Cluster',
            singularResource: t.singular,
            verbs: t.verbs,
            ...(t.shortNames.length ? { shortNames: t.shortNames } : {}),
            ...(t.subresources.length
              ? {
                  subresources: t.subresources.map((subresource) => ({
                    subresource,
                    responseKind: subresourceKind(t, subresource),
                    verbs: SUBRESOURCE_VERBS,
                  })),
                }
              : {}),
          };
        }),
      freshness: 'Current',
    })),
  };
}

/** Aggregated discovery of `/api` (the core group, named "") or `/apis` (every named group). */
export function aggregatedDiscovery(core: boolean): object {
  const review = {
    metadata: { name: ACCESS_REVIEW.group },
    versions: [
      {
        version: ACCESS_REVIEW.version,
        resources: [
          {
            resource: ACCESS_REVIEW.plural,
            responseKind: {
              group: ACCESS_REVIEW.group,
              version: ACCESS_REVIEW.version,
              kind: ACCESS_REVIEW.kind,
            },
            scope: 'Cluster',
            singularResource: REVIEW_RESOURCE.singularName,
            verbs: REVIEW_RESOURCE.verbs,
          },
        ],
        freshness: 'Current',
      },
    ],
  };
  const items = core
    ? [discoveryGroup('', typesOf('', 'v1'))]
    : [...[...groups()].map(([name, types]) => discoveryGroup(name, types)), review];
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}

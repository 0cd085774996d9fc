/**
 * Reading an object's metadata only: the API server answers a GET whose Accept asks for
 * PartialObjectMetadata with the metadata and nothing else, so that the orchestrator can learn that a
 * credentials Secret exists without ever receiving its data. See
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#receiving-resources-as-partial-object-metadata
 */
import { setHeaderOptions, type V1ObjectMeta } from '@kubernetes/client-node';
import type { CredentialsSecretRef } from '../controlplane/openstack-cloud-config.ts';
import type { KubeClients } from './clients.ts';
import { call, orNotFound } from './errors.ts';

/** The Accept header that asks the API server for an object's metadata only. */
export const PARTIAL_OBJECT_METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/**
 * A Secret's metadata, or undefined when there is no such Secret (404); any other failure is thrown as the
 * named API error. Only the metadata is returned (even from a server that ignored the Accept and sent it all).
 */
export async function readSecretMetadata(
  clients: Pick<KubeClients, 'core'>,
  { namespace, name }: CredentialsSecretRef,
): Promise<V1ObjectMeta | undefined> {
  const answer = await orNotFound(
    call(`read the metadata of Secret ${namespace}/${name}`, () =>
      clients.core.readNamespacedSecret(
        { namespace, name },
        setHeaderOptions('Accept', PARTIAL_OBJECT_METADATA),
      ),
    ),
  );
  return answer?.metadata;
}

import { fleetStepHandler } from '../lib/aws/fleet-step-handler.ts';
import { ListClustersEventSchema, listClusters } from '../lib/drift/steps.ts';

export const handler = fleetStepHandler('list-clusters', ListClustersEventSchema, listClusters);

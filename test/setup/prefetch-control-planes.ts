/**
 * Real-API twins in the tests start the next twin's etcd and kube-apiserver while the current one runs
 * (lib/twin/real/control-plane-source.ts): a test file starts dozens of them one after another. What no
 * test of the file took is stopped with it.
 */
import { afterAll } from 'vitest';
import {
  prefetchControlPlanes,
  stopPrefetchedControlPlanes,
} from '../../lib/twin/real/control-plane-source.ts';

prefetchControlPlanes();
afterAll(stopPrefetchedControlPlanes);

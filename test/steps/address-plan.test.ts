/** The cluster's address plan: the refusal of nodes the CCM would never initialise, and the changes in words. */
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PreflightFailedError } from '../../lib/errors.ts';
import { addressChangesOf, describeAddressChanges, expectedAddresses } from '../../lib/steps/address-plan.ts';

const node = (name: string, ...addresses: [string, string][]): V1Node => ({
  metadata: { name },
  status: { addresses: addresses.map(([type, address]) => ({ type, address })) },
});

describe('expectedAddresses', () => {
  it('refuses, naming each node and why, when the CCM would never initialise one', () => {
    const predictions = {
      'worker-1': { initialises: false as const, reason: 'its --node-ip 10.9.9.9 is not among …' },
      'worker-2': { initialises: true as const, addresses: [] },
    };
    expect(() => expectedAddresses(predictions, 'AWS cloud-controller-manager')).toThrow(
      PreflightFailedError,
    );
    expect(() => expectedAddresses(predictions, 'AWS cloud-controller-manager')).toThrow(
      /AWS cloud-controller-manager would never initialise 1 node\(s\).*worker-1: its --node-ip 10\.9\.9\.9/,
    );
  });
});

describe('addressChangesOf and describeAddressChanges', () => {
  it('lists each node whose addresses change, and says how many stay', () => {
    const nodes = [
      node('cp-1', ['InternalIP', '10.0.0.10'], ['Hostname', 'cp-1']),
      node('worker-1', ['InternalIP', '10.0.0.11'], ['InternalIP', '10.1.0.11'], ['Hostname', 'worker-1']),
    ];
    const changes = addressChangesOf(nodes, {
      'cp-1': [
        { type: 'InternalIP', address: '10.0.0.10' },
        { type: 'Hostname', address: 'cp-1' },
      ],
      'worker-1': [
        { type: 'InternalIP', address: '10.0.0.11' },
        { type: 'Hostname', address: 'worker-1' },
        { type: 'ExternalIP', address: '203.0.113.7' },
      ],
    });
    expect(describeAddressChanges(changes, nodes.length)).toEqual([
      'node addresses after the flip (as the cloud-controller-manager sets them), 1 node(s) change:',
      '  worker-1: - InternalIP 10.1.0.11, + ExternalIP 203.0.113.7',
      '  the addresses of 1 other node(s) unchanged',
    ]);
    expect(describeAddressChanges([], 2)).toEqual(['node addresses after the flip: unchanged on every node']);
  });
});

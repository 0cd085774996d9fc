/**
 * The addresses the CCM sets after the flip, predicted as k8s.io/cloud-provider's node address helpers set
 * them (cases from node/helpers/address_test.go of v0.26 and v0.30), with the minors' differences: one node
 * IP before 1.29, a dual-stack pair from 1.29.
 */
import { describe, expect, it } from 'vitest';
import {
  addressChanges,
  canonicalIP,
  type NodeAddress,
  predictNodeAddresses,
} from '../../lib/providers/node-addresses.ts';

const internal = (address: string): NodeAddress => ({ type: 'InternalIP', address });
const external = (address: string): NodeAddress => ({ type: 'ExternalIP', address });
const hostname: NodeAddress = { type: 'Hostname', address: 'node-1' };

describe('predictNodeAddresses', () => {
  it.each([26, 29, 30])('keeps only the node IP of its type, listed first (1.%i)', (minor) => {
    const current = [
      internal('10.1.1.1'),
      internal('10.2.2.2'),
      internal('10.3.3.3'),
      external('55.55.55.55'),
      hostname,
    ];
    expect(predictNodeAddresses({ minor, current, nodeIP: '10.1.1.1' })).toEqual({
      initialises: true,
      addresses: [internal('10.1.1.1'), external('55.55.55.55'), hostname],
    });
    expect(predictNodeAddresses({ minor, current, nodeIP: '55.55.55.55' })).toEqual({
      initialises: true,
      addresses: [
        external('55.55.55.55'),
        internal('10.1.1.1'),
        internal('10.2.2.2'),
        internal('10.3.3.3'),
        hostname,
      ],
    });
  });

  it('keeps every type the node IP matches (an InternalIP and ExternalIP alike)', () => {
    const current = [
      internal('44.44.44.44'),
      external('44.44.44.44'),
      internal('55.55.55.55'),
      external('55.55.55.55'),
      hostname,
    ];
    expect(predictNodeAddresses({ minor: 30, current, nodeIP: '55.55.55.55' })).toEqual({
      initialises: true,
      addresses: [internal('55.55.55.55'), external('55.55.55.55'), hostname],
    });
  });

  it('matches IPs as IPs, not as text', () => {
    const current = [internal('10.1.1.1'), internal('2600:1f14:1d4:d101:0:0:0:ba3d'), hostname];
    expect(predictNodeAddresses({ minor: 30, current, nodeIP: '2600:1f14:1d4:d101::ba3d' })).toEqual({
      initialises: true,
      addresses: [internal('2600:1f14:1d4:d101:0:0:0:ba3d'), hostname],
    });
    expect(canonicalIP('010.001.001.001')).toBe('10.1.1.1');
    expect(canonicalIP('10.1.1.256')).toBeUndefined();
  });

  it('leaves the cloud’s addresses as they are without a specific node IP (none, 0.0.0.0, ::, unreadable)', () => {
    const current = [internal('10.1.1.1'), internal('10.2.2.2'), hostname];
    for (const nodeIP of [undefined, '0.0.0.0', '::', 'not-an-ip']) {
      expect(predictNodeAddresses({ minor: 26, current, nodeIP })).toEqual({
        initialises: true,
        addresses: current,
      });
    }
  });

  it('says the CCM would never initialise a node whose node IP the cloud does not list', () => {
    const current = [internal('10.1.1.1'), external('55.55.55.55'), hostname];
    const prediction = predictNodeAddresses({ minor: 30, current, nodeIP: '10.2.2.2' });
    expect(prediction.initialises).toBe(false);
    expect(prediction.initialises === false && prediction.reason).toMatch(
      /--node-ip 10\.2\.2\.2 is not among/,
    );
  });

  it('takes a dual-stack pair from 1.29 only, and never two IPs of one family', () => {
    const current = [
      internal('10.1.1.1'),
      internal('10.2.2.2'),
      internal('fd00::1'),
      internal('fd00::2'),
      hostname,
    ];
    const pair = '10.1.1.1,fd00::2';
    expect(predictNodeAddresses({ minor: 29, current, nodeIP: pair })).toEqual({
      initialises: true,
      addresses: [internal('10.1.1.1'), internal('fd00::2'), hostname],
    });
    for (const minor of [26, 28]) {
      const prediction = predictNodeAddresses({ minor, current, nodeIP: pair });
      expect(prediction.initialises === false && prediction.reason).toMatch(/from 1\.29 only/);
    }
    const same = predictNodeAddresses({ minor: 30, current, nodeIP: '10.1.1.1,10.2.2.2' });
    expect(same.initialises === false && same.reason).toMatch(/one IP or a dual-stack pair/);
  });
});

describe('addressChanges', () => {
  it('compares as sets of type and address', () => {
    const before = [internal('10.0.0.1'), internal('10.1.0.1'), hostname];
    const after = [hostname, internal('10.0.0.1'), external('55.55.55.55')];
    expect(addressChanges(before, after)).toEqual({
      added: [external('55.55.55.55')],
      removed: [internal('10.1.0.1')],
    });
  });
});

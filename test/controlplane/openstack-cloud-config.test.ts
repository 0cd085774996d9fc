/**
 * The in-tree OpenStack cloud.conf translated for OCCM (OpenShift's CloudConfigTransformer rules), and the
 * INI subset it is read with: untouched lines kept byte for byte, anything else refused by line number.
 */
import { describe, expect, it } from 'vitest';
import {
  deleteKey,
  findSection,
  getKey,
  parseIni,
  serializeIni,
  setKey,
} from '../../lib/controlplane/cloud-config-ini.ts';
import {
  openstackUsesOctavia,
  translatedCloudConfigPath,
  translateOpenstackCloudConfig,
} from '../../lib/controlplane/openstack-cloud-config.ts';
import { InvalidInputError } from '../../lib/errors.ts';

const LEGACY = `# in-tree
[Global]
auth-url = https://keystone.example:5000/v3
region=RegionOne
secret-name = openstack-credentials
secret-namespace = kube-system
kubeconfig-path =

[LoadBalancer]
use-octavia = true
subnet-id = 6a5c1b0e

[BlockStorage]
bs-version = v3

[Metadata]
search-order = configDrive,metadataService
`;

describe('translateOpenstackCloudConfig', () => {
  it('replaces the legacy secret keys by clouds.yaml from the mounted Secret and drops what OCCM does not read', () => {
    const out = translateOpenstackCloudConfig(LEGACY);
    expect(out?.secret).toEqual({ name: 'openstack-credentials', namespace: 'kube-system' });
    expect(out?.text).toBe(`# in-tree
[Global]
auth-url = https://keystone.example:5000/v3
region=RegionOne
use-clouds = true
clouds-file = /etc/openstack/secret/clouds.yaml
cloud = openstack

[LoadBalancer]
subnet-id = 6a5c1b0e

[Metadata]
search-order = configDrive,metadataService
`);
  });

  it('gives the same copy for the same original, and a copy needs none of its own', () => {
    const once = translateOpenstackCloudConfig(LEGACY);
    expect(translateOpenstackCloudConfig(LEGACY)).toEqual(once);
    expect(translateOpenstackCloudConfig(once?.text ?? '')).toBeUndefined();
  });

  it('leaves a config without secret-name alone (OCCM reads it as it is)', () => {
    expect(translateOpenstackCloudConfig('[Global]\nauth-url = https://k\nusername = u\n')).toBeUndefined();
    expect(translateOpenstackCloudConfig('[LoadBalancer]\nuse-octavia = true\n')).toBeUndefined();
  });

  it('reads names as gcfg does: any case of section and key, quotes and trailing comments off, kube-system by default', () => {
    const out = translateOpenstackCloudConfig(
      '[global]\nSecret-Name = "creds" ; the in-tree Secret\nuse-clouds = false\n',
    );
    expect(out?.secret).toEqual({ name: 'creds', namespace: 'kube-system' });
    // An existing use-clouds is replaced where it is, not repeated.
    expect(out?.text).toBe(
      '[global]\nuse-clouds = true\nclouds-file = /etc/openstack/secret/clouds.yaml\ncloud = openstack\n',
    );
  });

  it('reports the namespace the config names, for the orchestrator to check', () => {
    const out = translateOpenstackCloudConfig('[Global]\nsecret-name = c\nsecret-namespace = openstack\n');
    expect(out?.secret).toEqual({ name: 'c', namespace: 'openstack' });
  });

  it.each([
    ['a key before any section', 'secret-name = x\n[Global]\n', 1],
    ['an unclosed header', '[Global]\nregion = r\n[LoadBalancer\n', 3],
    ['a continuation line', '[Global]\npassword = abc\\\n', 2],
    ['a YAML file', 'clouds:\n  openstack:\n', 1],
  ])('refuses %s, naming the line and not its text', (_, text, line) => {
    let error: unknown;
    try {
      translateOpenstackCloudConfig(text);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toMatch(new RegExp(`^line ${line} `));
    expect((error as Error).message).not.toMatch(/abc|secret-name|clouds:/);
  });

  it('puts the copy next to the original', () => {
    expect(translatedCloudConfigPath('/etc/kubernetes/cloud.conf')).toBe(
      '/etc/kubernetes/cloud.conf.external',
    );
  });
});

describe('openstackUsesOctavia', () => {
  it.each([
    ['true', true],
    ['Yes', true],
    ['on', true],
    ['1', true],
    ['false', false],
    ['NO', false],
    ['off', false],
    ['0', false],
    ['"false" ; Neutron LBaaS', false],
  ])('reads use-octavia = %s as gcfg does (%s)', (value, expected) => {
    expect(openstackUsesOctavia(`[Global]\nregion = r\n[loadbalancer]\nUse-Octavia = ${value}\n`)).toBe(
      expected,
    );
  });

  it('reads a bare use-octavia as true, and the last of a repeated one', () => {
    expect(openstackUsesOctavia('[LoadBalancer]\nuse-octavia\n')).toBe(true);
    expect(openstackUsesOctavia('[LoadBalancer]\nuse-octavia = true\nuse-octavia = false\n')).toBe(false);
  });

  it('says nothing when the key or its section is absent', () => {
    expect(openstackUsesOctavia('[Global]\nregion = r\n')).toBeUndefined();
    expect(openstackUsesOctavia('[LoadBalancer]\nsubnet-id = s\n')).toBeUndefined();
  });
});

describe('the INI subset', () => {
  it('serialises an untouched document byte for byte, CRLF and a missing final newline included', () => {
    for (const text of [LEGACY, '[Global]\r\nregion = r\r\n', '; only\n[A]\nk', '']) {
      expect(serializeIni(parseIni(text))).toBe(text);
    }
  });

  it('sets a new key after the last key of its section, before the blank lines', () => {
    const doc = parseIni('[A]\nx = 1\n\n[B]\ny = 2\n');
    const a = findSection(doc, 'a');
    if (!a) throw new Error('no [A]');
    setKey(a, 'z', '3');
    deleteKey(a, 'x');
    expect(getKey(a, 'z')).toBe('3');
    expect(serializeIni(doc)).toBe('[A]\nz = 3\n\n[B]\ny = 2\n');
  });

  it('reads the last of a repeated key, as gcfg does', () => {
    const section = findSection(parseIni('[Global]\nregion = a\nregion = b\n'), 'Global');
    expect(section && getKey(section, 'region')).toBe('b');
  });
});

import { describe, expect, it } from 'vitest';
import {
  FieldSet,
  fieldElement,
  keyElement,
  pathString,
  valueElement,
} from '../../lib/twin/patch/fieldsv1.ts';

/** fieldsV1 of a `kubectl create deployment` entry, as a real API server stores it. */
const KUBECTL_CREATE = {
  'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
  'f:spec': {
    'f:replicas': {},
    'f:selector': {},
    'f:template': {
      'f:spec': {
        'f:containers': {
          'k:{"name":"nginx"}': {
            '.': {},
            'f:image': {},
            'f:name': {},
            'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } },
          },
        },
      },
    },
  },
};

describe('FieldSet and FieldsV1', () => {
  it('round-trips a real FieldsV1 document', () => {
    expect(FieldSet.fromFieldsV1(KUBECTL_CREATE).toFieldsV1()).toEqual(KUBECTL_CREATE);
  });

  it('knows members from containers: `.` and leaves are members, plain parents are not', () => {
    const set = FieldSet.fromFieldsV1(KUBECTL_CREATE);
    const container = [
      fieldElement('spec'),
      fieldElement('template'),
      fieldElement('spec'),
      fieldElement('containers'),
      keyElement({ name: 'nginx' }),
    ];
    expect(set.has(container)).toBe(true);
    expect(set.has([...container, fieldElement('image')])).toBe(true);
    expect(set.has([fieldElement('spec')])).toBe(false);
    expect(set.has([fieldElement('spec'), fieldElement('paused')])).toBe(false);
  });

  it('computes union, difference and intersection, dropping emptied branches', () => {
    const a = new FieldSet();
    a.insert([fieldElement('spec'), fieldElement('replicas')]);
    a.insert([fieldElement('metadata'), fieldElement('labels'), fieldElement('app')]);
    const b = new FieldSet();
    b.insert([fieldElement('spec'), fieldElement('replicas')]);
    expect(a.difference(b).toFieldsV1()).toEqual({ 'f:metadata': { 'f:labels': { 'f:app': {} } } });
    expect(a.intersection(b).toFieldsV1()).toEqual({ 'f:spec': { 'f:replicas': {} } });
    expect(b.union(a).equals(a)).toBe(true);
    expect(a.difference(a).isEmpty()).toBe(true);
  });

  it('treats struct fields with owned children as owned for pruning', () => {
    const set = new FieldSet();
    set.insert([fieldElement('spec'), fieldElement('strategy'), fieldElement('type')]);
    const named = set.withNamedFieldsAsMembers();
    expect(named.has([fieldElement('spec'), fieldElement('strategy')])).toBe(true);
    expect(set.has([fieldElement('spec'), fieldElement('strategy')])).toBe(false);
  });

  it('prints paths the way conflict messages do', () => {
    expect(
      pathString([
        fieldElement('spec'),
        fieldElement('ports'),
        keyElement({ protocol: 'TCP', port: 443 }),
        fieldElement('nodePort'),
      ]),
    ).toBe('.spec.ports[port=443,protocol="TCP"].nodePort');
    expect(pathString([fieldElement('metadata'), fieldElement('finalizers'), valueElement('a/b')])).toBe(
      '.metadata.finalizers[="a/b"]',
    );
  });

  it('refuses documents that are not FieldsV1', () => {
    expect(() => FieldSet.fromFieldsV1([1])).toThrow();
    expect(() => FieldSet.fromFieldsV1({ 'x:y': {} })).toThrow();
  });
});

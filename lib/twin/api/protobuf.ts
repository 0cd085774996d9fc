/**
 * Kubernetes protobuf bodies (application/vnd.kubernetes.protobuf), decoded to the JSON objects the rest
 * of the twin works with: the `k8s\0` magic, a runtime.Unknown envelope naming the kind, and the object in
 * protobuf wire format, read by the schema tools/kube/protobuf-schema.ts derives from k8s.io/api
 * (protobuf-schema.json). The JSON mapping is the API machinery's: metav1.Time as RFC 3339 (a zero Time
 * is left out, as Go marshals it to null; so is any zero value JSON's omitempty leaves out), IntOrString as a number or a string, Quantity as its string,
 * Duration as Go prints one, RawExtension and FieldsV1 as the JSON they carry, bytes as base64, fields
 * that JSON inlines merged into their parent. Fields the schema does not know are skipped, as a protobuf
 * decoder skips them. See https://kubernetes.io/docs/reference/using-api/api-concepts/#protobuf-encoding.
 */
import { readFileSync } from 'node:fs';
import { badRequest } from '../errors.ts';

type Field = [number, string, string, string];

interface Schema {
  readonly kinds: Readonly<Record<string, string>>;
  readonly messages: Readonly<Record<string, readonly Field[]>>;
}

export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);
const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';

let schema: Schema | undefined;
function loadSchema(): Schema {
  schema ??= JSON.parse(readFileSync(new URL('./protobuf-schema.json', import.meta.url), 'utf8')) as Schema;
  return schema;
}

/** A protobuf reader over one message's bytes. */
class Reader {
  pos = 0;
  readonly buf: Buffer;

  constructor(buf: Buffer) {
    this.buf = buf;
  }

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw badRequest('protobuf: truncated varint');
      const b = this.buf[this.pos++] as number;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  }

  bytes(): Buffer {
    const len = Number(this.varint());
    if (this.pos + len > this.buf.length) throw badRequest('protobuf: truncated field');
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw badRequest(`protobuf: unsupported wire type ${wire}`);
  }
}

/** Go's time.Duration.String(), from nanoseconds. */
function goDuration(ns: bigint): string {
  if (ns === 0n) return '0s';
  const neg = ns < 0n;
  let n = neg ? -ns : ns;
  let out: string;
  if (n < 1_000_000_000n) {
    const [unit, div] = n < 1_000n ? ['ns', 1n] : n < 1_000_000n ? ['µs', 1_000n] : ['ms', 1_000_000n];
    out = `${trimFraction(n, div)}${unit}`;
  } else {
    const h = n / 3_600_000_000_000n;
    n -= h * 3_600_000_000_000n;
    const m = n / 60_000_000_000n;
    n -= m * 60_000_000_000n;
    out = `${h > 0n ? `${h}h` : ''}${h > 0n || m > 0n ? `${m}m` : ''}${trimFraction(n, 1_000_000_000n)}s`;
  }
  return neg ? `-${out}` : out;
}

function trimFraction(n: bigint, div: bigint): string {
  const whole = n / div;
  const frac = n % div;
  if (frac === 0n) return String(whole);
  const digits = String(div).length - 1;
  return `${whole}.${String(frac).padStart(digits, '0').replace(/0+$/, '')}`;
}

function rfc3339(seconds: bigint, nanos: number, micro: boolean): string {
  const ms = Number(seconds) * 1000;
  const base = new Date(ms).toISOString().slice(0, 19);
  return micro ? `${base}.${String(Math.floor(nanos / 1000)).padStart(6, '0')}Z` : `${base}Z`;
}

/** A message's own JSON form for the API machinery's special types; undefined for ordinary messages. */
function special(type: string, fields: Map<number, unknown>): { value: unknown } | undefined {
  switch (type) {
    case `${META}.Time`:
    case `${META}.MicroTime`: {
      const seconds = BigInt.asIntN(64, (fields.get(1) as bigint | undefined) ?? 0n);
      const nanos = Number((fields.get(2) as bigint | undefined) ?? 0n);
      if (seconds === 0n && nanos === 0) return { value: undefined };
      return { value: rfc3339(seconds, nanos, type.endsWith('MicroTime')) };
    }
    case `${META}.Duration`:
      return { value: goDuration(BigInt.asIntN(64, (fields.get(1) as bigint | undefined) ?? 0n)) };
    case 'k8s.io.apimachinery.pkg.util.intstr.IntOrString':
      return {
        value:
          (fields.get(1) as bigint | undefined) === 1n
            ? String(fields.get(3) ?? '')
            : Number(BigInt.asIntN(32, (fields.get(2) as bigint | undefined) ?? 0n)),
      };
    case 'k8s.io.apimachinery.pkg.api.resource.Quantity':
      return { value: String(fields.get(1) ?? '') };
    case 'k8s.io.apimachinery.pkg.runtime.RawExtension':
    case `${META}.FieldsV1`: {
      const raw = fields.get(1) as Buffer | undefined;
      return { value: raw?.length ? JSON.parse(raw.toString('utf8')) : {} };
    }
    default:
      return undefined;
  }
}

const SPECIAL = new Set([
  `${META}.Time`,
  `${META}.MicroTime`,
  `${META}.Duration`,
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString',
  'k8s.io.apimachinery.pkg.api.resource.Quantity',
  'k8s.io.apimachinery.pkg.runtime.RawExtension',
  `${META}.FieldsV1`,
]);

function scalar(type: string, wire: number, r: Reader): unknown {
  if (wire === 2) {
    const b = r.bytes();
    if (type === 'string') return b.toString('utf8');
    if (type === 'bytes') return Buffer.from(b);
    return b;
  }
  if (wire === 1) {
    const v = r.buf.readDoubleLE(r.pos);
    r.pos += 8;
    return v;
  }
  if (wire === 5) {
    const v = r.buf.readFloatLE(r.pos);
    r.pos += 4;
    return v;
  }
  const v = r.varint();
  if (type === 'bool') return v !== 0n;
  if (type === 'int32') return Number(BigInt.asIntN(32, v));
  if (type === 'int64') return BigInt.asIntN(64, v);
  return v;
}

/** The JSON form of a decoded scalar (int64 as a number, bytes as base64). */
function jsonScalar(type: string, value: unknown): unknown {
  if (type === 'bytes') return (value as Buffer).toString('base64');
  if (typeof value === 'bigint') return Number(value);
  return value;
}

function decodeMessage(type: string, buf: Buffer, s: Schema): unknown {
  const r = new Reader(buf);
  if (SPECIAL.has(type)) {
    // Their fields read raw (a varint as a bigint, anything length-delimited as bytes); special() says what they mean.
    const raw = new Map<number, unknown>();
    while (!r.done) {
      const tag = Number(r.varint());
      raw.set(tag >> 3, (tag & 7) === 2 ? r.bytes() : (tag & 7) === 0 ? r.varint() : r.skip(tag & 7));
    }
    return special(type, raw)?.value;
  }
  const fields = new Map((s.messages[type] ?? []).map((f) => [f[0], f]));
  const out: Record<string, unknown> = {};
  while (!r.done) {
    const tag = Number(r.varint());
    const field = fields.get(tag >> 3);
    const wire = tag & 7;
    if (!field) {
      r.skip(wire);
      continue;
    }
    const [, name, ftype, flags] = field;
    const map = /^map<([^,]+),(.+)>$/.exec(ftype);
    if (map) {
      const entry = new Reader(r.bytes());
      let key: unknown = '';
      let value: unknown;
      while (!entry.done) {
        const t = Number(entry.varint());
        if (t >> 3 === 1) key = scalar(map[1] as string, t & 7, entry);
        else if (t >> 3 === 2) value = decodeValue(map[2] as string, t & 7, entry, s);
        else entry.skip(t & 7);
      }
      const target = (out[name] ?? {}) as Record<string, unknown>;
      out[name] = target;
      target[String(key)] = value ?? (s.messages[map[2] as string] ? {} : '');
      continue;
    }
    // A packed repeated scalar (proto3 style) arrives as one length-delimited run.
    if (flags.includes('r') && wire === 2 && !s.messages[ftype] && ftype !== 'string' && ftype !== 'bytes') {
      const run = new Reader(r.bytes());
      const list = (out[name] ?? []) as unknown[];
      out[name] = list;
      while (!run.done) list.push(jsonScalar(ftype, scalar(ftype, 0, run)));
      continue;
    }
    const value = decodeValue(ftype, wire, r, s);
    // Go's JSON leaves out a zero value of an omitempty field that is not a pointer.
    if (!flags.includes('z') && !flags.includes('r') && (value === '' || value === 0 || value === false))
      continue;
    if (flags.includes('r')) out[name] = [...((out[name] ?? []) as unknown[]), value];
    else if (flags.includes('i') && value && typeof value === 'object') Object.assign(out, value);
    else if (value !== undefined) out[name] = value;
  }
  return out;
}

function decodeValue(type: string, wire: number, r: Reader, s: Schema): unknown {
  if (s.messages[type] || SPECIAL.has(type)) return decodeMessage(type, r.bytes(), s);
  return jsonScalar(type, scalar(type, wire, r));
}

/** A protobuf request body as the JSON object it stands for (apiVersion and kind from its envelope). */
export function decodeProtobufObject(body: Buffer): Record<string, unknown> {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw badRequest('the protobuf body does not start with the k8s magic number');
  }
  const s = loadSchema();
  const envelope = new Reader(body.subarray(MAGIC.length));
  let apiVersion = '';
  let kind = '';
  let raw: Buffer | undefined;
  while (!envelope.done) {
    const tag = Number(envelope.varint());
    if (tag >> 3 === 1) {
      const meta = new Reader(envelope.bytes());
      while (!meta.done) {
        const t = Number(meta.varint());
        const v = meta.bytes().toString('utf8');
        if (t >> 3 === 1) apiVersion = v;
        else if (t >> 3 === 2) kind = v;
      }
    } else if (tag >> 3 === 2) raw = envelope.bytes();
    else envelope.skip(tag & 7);
  }
  const type = s.kinds[`${apiVersion}/${kind}`];
  if (!type) throw badRequest(`the twin does not decode protobuf for ${apiVersion} ${kind}`);
  const obj = decodeMessage(type, raw ?? Buffer.alloc(0), s) as Record<string, unknown>;
  return { apiVersion, kind, ...obj };
}

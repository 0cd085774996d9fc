/** IPv4 CIDR arithmetic for the twin's node IPAM and routes (its clusters are single-stack IPv4). */

interface Cidr {
  readonly base: number;
  readonly bits: number;
}

function parseCidr(cidr: string): Cidr | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr.trim());
  if (!m) return undefined;
  const octets = m.slice(1, 5).map(Number);
  const bits = Number(m[5]);
  if (octets.some((o) => o > 255) || bits > 32) return undefined;
  const ip = octets.reduce((acc, o) => acc * 256 + o, 0);
  const size = 2 ** (32 - bits);
  return { base: ip - (ip % size), bits };
}

function format(base: number, bits: number): string {
  const octets = [24, 16, 8, 0].map((shift) => Math.floor(base / 2 ** shift) % 256);
  return `${octets.join('.')}/${bits}`;
}

/** The IPv4 range of a `--cluster-cidr` list (its first IPv4 entry), or undefined when it has none. */
export function ipv4ClusterCidr(list: string | undefined): string | undefined {
  for (const entry of (list ?? '').split(',')) {
    const cidr = parseCidr(entry);
    if (cidr) return format(cidr.base, cidr.bits);
  }
  return undefined;
}

/** The `index`-th subnet of `bits` in `cidr`, or undefined past its end. */
export function subnetAt(cidr: string, index: number, bits: number): string | undefined {
  const parent = parseCidr(cidr);
  if (!parent || bits < parent.bits || index >= 2 ** (bits - parent.bits)) return undefined;
  return format(parent.base + index * 2 ** (32 - bits), bits);
}

/** Whether `inner` lies within `outer`. */
export function contains(outer: string, inner: string): boolean {
  const o = parseCidr(outer);
  const i = parseCidr(inner);
  return !!o && !!i && i.bits >= o.bits && i.base - (i.base % 2 ** (32 - o.bits)) === o.base;
}

/**
 * The run report as one HTML file that needs nothing else: styles inline, no script, no font, no image, no
 * request of any kind. The timeline is lists of positioned items (one list per lane), each focusable with its
 * details in a tooltip shown on hover and on keyboard focus; the same spans follow as a table, for reading
 * in order, for screen readers and for print.
 */
import { HOLDER_LABELS } from './holders.ts';
import type { FileDiff, FileState, Lane, RunReport, Span, SpanKind } from './model.ts';

const esc = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

/** 0.45 s, 12.3 s, 4 min 05 s. */
export function formatDuration(ms: number): string {
  if (ms < 10_000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

const KIND_NAMES: Readonly<Record<SpanKind, string>> = {
  step: 'workflow step',
  'kubelet-restart': 'kubelet restart',
  'static-pods-restart': 'static pod restart',
  'uninitialized-taint': 'uninitialized taint',
  wait: 'wait',
  failed: 'failed step',
  holder: 'cloud loops held by',
  invariant: 'invariant violated',
};

const OUTCOME_WORDS: Readonly<Record<RunReport['outcome'], string>> = {
  running: 'not finished',
  succeeded: 'succeeded',
  failed: 'failed',
  'rolled-back': 'rolled back',
};

function pct(ms: number, total: number): string {
  return `${((100 * ms) / total).toFixed(3)}%`;
}

/** The step between tick marks: 1, 2 or 5 × 10ⁿ ms, about eight of them. */
function tickStep(totalMs: number): number {
  const raw = totalMs / 8;
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  return [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw) ?? raw;
}

function spanItem(lane: Lane, span: Span, total: number, id: string): string {
  const took = span.endMs - span.startMs;
  const when = `${formatDuration(span.startMs)} to ${formatDuration(span.endMs)} (${formatDuration(took)})`;
  const what = span.kind === 'step' ? span.label : `${KIND_NAMES[span.kind]}: ${span.label}`;
  // Its name says what it is; its description (the tooltip) when, and any detail.
  const label = `${lane.title}: ${what}`;
  const right = span.startMs > total * 0.6 ? ' tip-right' : '';
  const variant = span.variant ? ` v-${esc(span.variant)}` : '';
  return `<li class="span k-${span.kind}${variant}" data-kind="${span.kind}" style="left:${pct(span.startMs, total)};width:${pct(took, total)}" tabindex="0" aria-label="${esc(label)}" aria-describedby="${id}"><span class="name" aria-hidden="true">${esc(span.label)}</span><span class="tip${right}" role="tooltip" id="${id}"><strong aria-hidden="true">${esc(what)}</strong><br>${esc(when)}${span.detail ? `<br>${esc(span.detail)}` : ''}</span></li>`;
}

function timeline(report: RunReport, total: number): string {
  let n = 0;
  const lanes = report.lanes.map((lane) => {
    const items = lane.spans.map((s) => spanItem(lane, s, total, `tip-${n++}`)).join('');
    const sub = lane.subtitle ? `<span class="sub">${esc(lane.subtitle)}</span>` : '';
    return `<li class="lane role-${lane.role}" data-lane="${esc(lane.title)}"><h3 class="lane-title" id="lane-${lane.id}">${esc(lane.title)}${sub}</h3><ul class="track" aria-labelledby="lane-${lane.id}">${items}</ul></li>`;
  });
  const step = tickStep(total);
  const axis: string[] = [];
  for (let t = 0; t <= total; t += step) {
    axis.push(`<span class="tick" style="left:${pct(t, total)}">${formatDuration(t)}</span>`);
  }
  // The tracks' grid lines fall on the ticks: the custom property is the step as a share of the width.
  return `<ol class="timeline" style="--tick:${pct(step, total)}" aria-label="Timeline: one lane for the workflow, one for the cloud controllers, one per node">${lanes.join('')}</ol><div class="axis" aria-hidden="true"><span></span><div class="ticks">${axis.join('')}</div></div>`;
}

const LEGEND: ReadonlyArray<readonly [string, string]> = [
  ['k-step', 'workflow step'],
  ['k-kubelet-restart', 'kubelet restart'],
  ['k-static-pods-restart', 'kube-apiserver and kube-controller-manager restart'],
  ['k-uninitialized-taint', 'uninitialized taint, until the CCM initialised the node'],
  ['k-wait', 'wait (a retry, the approval gate)'],
  ['k-failed', 'failed'],
  ...(['kcm', 'kcm-lease', 'ccm-lease', 'ccm', 'none'] as const).map(
    (h) => [`k-holder v-${h}`, HOLDER_LABELS[h]] as const,
  ),
  ['k-invariant', 'invariant violated (twin monitor)'],
];

function legend(): string {
  return `<ul class="legend" aria-label="Legend">${LEGEND.map(([cls, text]) => `<li><span class="swatch ${cls}" aria-hidden="true"></span>${esc(text)}</li>`).join('')}</ul>`;
}

function summary(report: RunReport): string {
  const rows: Array<[key: string, term: string, value: string, note?: string]> = [
    ['outcome', 'Outcome', OUTCOME_WORDS[report.outcome]],
    ['duration', 'Duration', formatDuration(report.durationMs)],
  ];
  if (report.lowerBound) {
    const ratio = report.durationMs / report.lowerBound.ms;
    rows.push([
      'lower-bound',
      'Duration / lower bound',
      `${ratio.toFixed(2)}× of ${formatDuration(report.lowerBound.ms)}`,
      `from ${report.lowerBound.basis}`,
    ]);
  }
  if (report.apiRequests !== undefined)
    rows.push(['api-requests', 'API requests', String(report.apiRequests)]);
  if (report.transitions !== undefined)
    rows.push(['transitions', 'State transitions', String(report.transitions)]);
  rows.push(['nodes', 'Nodes', String(report.nodes)]);
  if (report.maxUnavailable) rows.push(['max-unavailable', 'Max unavailable', String(report.maxUnavailable)]);
  if (report.executions > 1) rows.push(['executions', 'Executions', String(report.executions)]);
  const items = rows.map(
    ([key, term, value, note]) =>
      `<div data-summary="${key}"><dt>${term}</dt><dd>${esc(value)}${note ? `<small>${esc(note)}</small>` : ''}</dd></div>`,
  );
  const error = report.error
    ? `<p class="error" role="alert"><strong>${esc(report.error.name)}</strong>: ${esc(report.error.message)}</p>`
    : '';
  return `<dl class="summary">${items.join('')}</dl>${error}`;
}

function spanTable(report: RunReport): string {
  const rows = report.lanes
    .flatMap((lane) => lane.spans.map((span) => ({ lane, span })))
    .sort((a, b) => a.span.startMs - b.span.startMs);
  const body = rows
    .map(
      ({ lane, span }) =>
        `<tr><td>${esc(lane.title)}</td><td>${esc(KIND_NAMES[span.kind])}</td><td>${esc(span.label)}</td><td class="num">${formatDuration(span.startMs)}</td><td class="num">${formatDuration(span.endMs)}</td><td class="num">${formatDuration(span.endMs - span.startMs)}</td><td>${esc(span.detail ?? '')}</td></tr>`,
    )
    .join('');
  return `<table class="spans"><caption>Every span of the timeline, by start (times from the run's start)</caption><thead><tr><th scope="col">Lane</th><th scope="col">Kind</th><th scope="col">What</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Took</th><th scope="col">Detail</th></tr></thead><tbody>${body}</tbody></table>`;
}

function flagList(state: FileState | undefined, other: FileState | undefined, tag: 'del' | 'ins'): string {
  if (!state) return '<span class="muted">not reported</span>';
  if (!state.exists) return '<span class="muted">absent</span>';
  const hash = state.sha256 ? `<code>${esc(state.sha256.slice(0, 12))}</code>` : '';
  const flags = Object.entries(state.flags ?? {}).map(([k, v]) => {
    const text = `<code>--${esc(k)}=${esc(v)}</code>`;
    return other?.flags?.[k] === v ? text : `<${tag}>${text}</${tag}>`;
  });
  return `${hash}${flags.length ? `<br>${flags.join(' ')}` : ''}`;
}

function fileRow(f: FileDiff): string {
  return `<tr${f.changed ? ' class="changed"' : ''}><th scope="row"><code>${esc(f.path)}</code></th><td>${flagList(f.before, f.after, 'del')}</td><td>${flagList(f.after, f.before, 'ins')}</td><td>${f.changed ? 'changed' : 'unchanged'}</td></tr>`;
}

function files(report: RunReport): string {
  if (report.files.length === 0) return '<p>No node files were recorded.</p>';
  return report.files
    .map(
      (n) =>
        `<section class="node-files" data-node="${esc(n.node)}"><h3>${esc(n.node)}</h3><table><thead><tr><th scope="col">File</th><th scope="col">Before (snapshot)</th><th scope="col">After (agent's last report)</th><th scope="col">Change</th></tr></thead><tbody>${n.files.map(fileRow).join('')}</tbody></table></section>`,
    )
    .join('');
}

function invariantsSection(report: RunReport): string {
  if (!report.invariantsRead)
    return "<p>Not read: this report was made without a twin's <code>invariants.jsonl</code>.</p>";
  const spans = report.lanes.flatMap((l) => l.spans).filter((s) => s.kind === 'invariant');
  if (spans.length === 0)
    return '<p data-invariants="none">None: the monitor recorded no interval with two cloud controllers, with a tainted node and none, with the API down, and no Node deleted.</p>';
  return `<ul data-invariants="${spans.length}">${spans.map((s) => `<li><strong>${esc(s.label)}</strong> from ${formatDuration(s.startMs)} to ${formatDuration(s.endMs)}${s.detail ? `: ${esc(s.detail)}` : ''}</li>`).join('')}</ul>`;
}

const STYLE = `
:root{--ink:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--ink);background:var(--bg)}
body{margin:0 auto;padding:1.5rem 2rem 3rem;max-width:90rem;line-height:1.4}
h1{font-size:1.6rem;margin:0 0 .2rem}h2{font-size:1.2rem;margin:2rem 0 .6rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}
.meta{color:var(--muted);margin:0}
.badge{display:inline-block;padding:.05rem .55rem;border-radius:1rem;font-size:1.1rem;vertical-align:.1rem}
.o-succeeded{background:#dafbe1;color:#116329}.o-failed{background:#ffebe9;color:#a40e26}.o-rolled-back{background:#fff8c5;color:#7d4e00}.o-running{background:#ddf4ff;color:#0a3069}
.summary{display:grid;grid-template-columns:repeat(auto-fill,minmax(9.5rem,1fr));gap:.6rem;margin:1rem 0}
.summary div{border:1px solid var(--line);border-radius:.4rem;padding:.5rem .7rem}
.summary dt{font-size:.8rem;color:var(--muted)}.summary dd{margin:0;font-size:1.05rem;font-weight:600}
.summary div[data-summary=lower-bound]{grid-column:span 2}.summary dd small{display:block;font-weight:400;font-size:.75rem;color:var(--muted)}
.error{border-left:4px solid #cf222e;padding:.4rem .8rem;background:#ffebe9}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.3rem;z-index:20}
.legend{display:flex;flex-wrap:wrap;gap:.3rem 1rem;list-style:none;padding:0;margin:.4rem 0 .8rem;font-size:.8rem;color:var(--muted)}
.legend li{display:flex;align-items:center;gap:.35rem}
.swatch{display:inline-block;width:1.4rem;height:.8rem;border-radius:2px;position:static}
.timeline{list-style:none;margin:0;padding:0}
.lane{display:grid;grid-template-columns:12rem 1fr;align-items:center;border-top:1px solid #eef1f4}
.lane.role-cloud{border-bottom:2px solid var(--line)}
.lane-title{font-size:.85rem;margin:0;padding:.15rem .5rem .15rem 0;font-weight:600;overflow-wrap:anywhere}
.lane-title .sub{display:block;font-weight:400;font-size:.72rem;color:var(--muted)}
.track{position:relative;height:2rem;margin:0;padding:0;list-style:none;background:repeating-linear-gradient(90deg,#e6e9ed 0 1px,transparent 1px var(--tick))}
.span{position:absolute;top:.2rem;height:1.6rem;min-width:2px;box-sizing:border-box;border-radius:3px;font-size:.72rem;cursor:default}
.span .name{display:block;overflow:hidden;white-space:nowrap;text-overflow:clip;padding:.3rem .3rem 0;line-height:1.1}
.span:focus{outline:3px solid #0969da;outline-offset:1px;z-index:6}
.span .tip{display:none;position:absolute;bottom:calc(100% + 4px);left:0;z-index:10;background:#1b1f24;color:#fff;padding:.4rem .55rem;border-radius:4px;width:max-content;max-width:24rem;white-space:normal;font-size:.78rem;line-height:1.35;box-shadow:0 2px 8px rgba(0,0,0,.25)}
.span .tip.tip-right{left:auto;right:0}
.span:hover .tip,.span:focus .tip{display:block}.span:hover,.span:focus{z-index:7}
.k-step{background:#dbe8f7;border:1px solid #6d93c4;color:#0b2a4a}
.k-failed{background:#ffd2cf;border:1px solid #cf222e;color:#5a0a12}
.k-wait{background:repeating-linear-gradient(135deg,#eaeef2 0 4px,#c9d1d9 4px 8px);border:1px solid #8c959f}
.k-kubelet-restart,.k-static-pods-restart,.k-uninitialized-taint{top:1.05rem;height:.75rem;border-radius:2px;z-index:2}
.k-kubelet-restart{background:#e36f00}.k-static-pods-restart{background:#8250df}
.k-uninitialized-taint{background:repeating-linear-gradient(135deg,#d4a72c 0 4px,#f5d860 4px 8px)}
.k-kubelet-restart .name,.k-static-pods-restart .name,.k-uninitialized-taint .name{display:none}
.k-holder{top:.35rem;height:1.3rem;color:#fff}
.v-kcm{background:#1a7f64}.v-kcm-lease{background:repeating-linear-gradient(135deg,#1a7f64 0 6px,#2da386 6px 12px)}
.v-ccm{background:#0969da}.v-ccm-lease{background:repeating-linear-gradient(135deg,#0969da 0 6px,#3d8bff 6px 12px)}
.v-none{background:#ffd2cf;color:#5a0a12;border:1px solid #cf222e}.v-unchanged{background:#eaeef2;color:var(--ink)}
.k-invariant{top:0;height:.35rem;background:#cf222e;border-radius:0;z-index:3;min-width:3px}.k-invariant .name{display:none}
.legend .k-kubelet-restart,.legend .k-static-pods-restart,.legend .k-uninitialized-taint,.legend .k-holder,.legend .k-invariant{height:.8rem}
.axis{display:grid;grid-template-columns:12rem 1fr;font-size:.72rem;color:var(--muted)}
.ticks{position:relative;height:1.2rem;border-top:1px solid var(--ink)}
.tick{position:absolute;top:0;transform:translateX(-50%);padding-top:.1rem;white-space:nowrap}.tick::before{content:"";position:absolute;left:50%;top:-.1rem;height:.3rem;border-left:1px solid var(--ink)}
table{border-collapse:collapse;width:100%;font-size:.8rem;margin:.3rem 0 1rem}
caption{text-align:left;color:var(--muted);padding:.2rem 0}
th,td{border-bottom:1px solid #eef1f4;padding:.25rem .4rem;text-align:left;vertical-align:top}
thead th{border-bottom:1px solid var(--line)}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.changed th{border-left:3px solid #e36f00}
ins{background:#dafbe1;text-decoration:none}del{background:#ffebe9}
.muted{color:var(--muted)}code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.95em}
.notes{color:var(--muted);font-size:.85rem}
@page{size:A4 landscape;margin:12mm}
@media print{
  *{-webkit-print-color-adjust:exact;print-color-adjust:exact}
  body{padding:0;max-width:none;font-size:9pt}
  .tip,.skip,.screen-only{display:none!important}
  .span:focus{outline:none}
  .lane,.summary div,tr{break-inside:avoid}
  h2{break-after:avoid}
  section.spans-table,section.files{break-before:page}
}
`;

export function renderReportHtml(report: RunReport): string {
  const total = Math.max(report.durationMs, ...report.lanes.flatMap((l) => l.spans.map((s) => s.endMs)), 1);
  const outcome = OUTCOME_WORDS[report.outcome];
  const title = `${report.kind} of ${report.clusterId}: ${outcome}`;
  const heading = `${report.kind[0]?.toUpperCase() ?? ''}${report.kind.slice(1)} of <code>${esc(report.clusterId)}</code> <span class="badge o-${report.outcome}">${esc(outcome)}</span>`;
  const notes = report.notes.length
    ? `<ul class="notes">${report.notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>ccm-migrate: ${esc(title)}, run ${esc(report.runId)}</title>
<style>${STYLE}</style>
</head>
<body>
<a class="skip" href="#spans-table">Skip the timeline: every span as a table</a>
<header>
<h1>${heading}</h1>
<p class="meta">Run <code>${esc(report.runId)}</code>, started ${esc(report.startedAt.replace('T', ' ').replace(/\.\d+Z$/, ' UTC'))}. Made by <code>ccm-migrate report</code> from the run's own records.</p>
</header>
<main>
<section aria-labelledby="h-summary"><h2 id="h-summary">Summary</h2>${summary(report)}</section>
<section aria-labelledby="h-timeline"><h2 id="h-timeline">Timeline</h2>
<p class="muted">Times are from the run's start.<span class="screen-only"> Each bar can be focused (Tab) to show its details.</span></p>
${legend()}
${timeline(report, total)}
</section>
<section aria-labelledby="h-invariants"><h2 id="h-invariants">Invariants (twin monitor)</h2>${invariantsSection(report)}</section>
<section class="spans-table" aria-labelledby="h-spans"><h2 id="h-spans"><a id="spans-table"></a>Every step, in order</h2>${spanTable(report)}</section>
<section class="files" aria-labelledby="h-files"><h2 id="h-files">Node files</h2>
<p class="muted">sha256 (first 12 hex digits) and cloud flags of each file the run reads or changes; never a file's contents.</p>
${files(report)}</section>
${notes ? `<section aria-labelledby="h-notes"><h2 id="h-notes">What the records do not say</h2>${notes}</section>` : ''}
</main>
</body>
</html>
`;
}

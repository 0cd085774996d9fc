/**
 * The run report of a real upgrade on a twin, as a user makes it (`upgrade --report`, then `report` with
 * the twin's monitor and latencies), rendered in headless chromium: a lane per node with a span per step,
 * the outcome and duration, keyboard tooltips; the same file again with the network off; and no file
 * contents anywhere, checked with a secret planted in a kubelet flags file the run rewrites.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../lib/cli/main.ts';
import { type HistoryEntry, readHistory } from '../../lib/local/history.ts';
import { formatDuration } from '../../lib/report/html.ts';
import { makespanLowerBoundMs } from '../../lib/report/makespan-bound.ts';
import { LocalRunStore } from '../../lib/store/local-store.ts';
import { loadTwinSpec } from '../../lib/twin/spec.ts';
import { browserRuns, launchChromium } from '../browser.ts';
import { FIXTURES, fixtureSpec, KUBELET_FLAGS, startTestTwin, type TestTwin } from '../twin/running-twin.ts';

const SECRET = `planted-secret-${randomBytes(8).toString('hex')}`;
const CLUSTER = 'report-twin';
const SCREENSHOT = fileURLToPath(new URL('../../test-results/report-run.png', import.meta.url));
const INSTANT = new Set(['Choice', 'Pass', 'Succeed', 'Fail']);
const withBrowser = browserRuns();

let t: TestTwin;
let dir: string;
let browser: Browser | undefined;
let html: string;
let historyText: string;
let history: HistoryEntry[];
let fileUrl: string;

beforeAll(async () => {
  const spec = await fixtureSpec(FIXTURES.awsHaMini, {
    edits: [{ group: 'worker', file: KUBELET_FLAGS, edit: (text) => `${text}KUBELET_TOKEN=${SECRET}\n` }],
  });
  [t, browser] = await Promise.all([
    startTestTwin(spec),
    withBrowser ? launchChromium() : Promise.resolve(undefined),
  ]);
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-report-'));
  const stateDir = path.join(dir, 'state');
  const out = path.join(dir, 'run.html');
  vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  const upgrade = [
    ...['upgrade', '--cluster-id', CLUSTER, '--kubeconfig', t.twin.kubeconfigPath],
    ...[
      '--state-dir',
      stateDir,
      '--max-unavailable',
      '2',
      '--yes',
      '--report',
      path.join(dir, 'at-end.html'),
    ],
  ];
  expect(await main(upgrade)).toBe(0);
  await t.twin.monitor.stop();
  const report = [
    ...['report', '--cluster-id', CLUSTER, '--state-dir', stateDir, '--out', out],
    ...['--twin-dir', t.twin.stateDir, '--twin-spec', FIXTURES.awsHaMini],
  ];
  expect(await main(report)).toBe(0);
  vi.restoreAllMocks();
  html = await readFile(out, 'utf8');
  const [record] = await new LocalRunStore(stateDir).list(CLUSTER);
  const historyFile = new LocalRunStore(stateDir).historyFile(CLUSTER, record?.runId ?? '');
  historyText = await readFile(historyFile, 'utf8');
  history = (await readHistory(historyFile)) ?? [];
  fileUrl = pathToFileURL(out).href;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await t?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** What the page must show, from the run's own history. */
function expectedSteps(node: string | undefined): string[] {
  return history
    .filter((e) => e.type === 'state' && e.event === 'exited' && e.node === node && !INSTANT.has(e.stateType))
    .map((e) => (e.type === 'state' ? e.state : ''));
}

describe('the run report of an upgrade on a twin', () => {
  it('was written by upgrade --report too', async () => {
    expect(await readFile(path.join(dir, 'at-end.html'), 'utf8')).toContain('succeeded');
  });

  it('holds hashes and flags of the files the run rewrote, never their contents', async () => {
    const flags = await t.readFile('worker-1', KUBELET_FLAGS);
    // The secret is really there, in a file the run rewrote and the agent read.
    expect(flags).toContain(SECRET);
    expect(flags).toContain('--cloud-provider=external');
    expect(html).toContain(createHash('sha256').update(flags).digest('hex').slice(0, 12));
    expect(html).not.toContain(SECRET);
    expect(historyText).not.toContain(SECRET);
  });

  it.skipIf(!withBrowser)(
    'shows every node its lane, every step its span, the outcome and the duration',
    async () => {
      const page = await (browser as Browser).newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(fileUrl);
      const nodes = ['cp-1', 'cp-2', 'cp-3', 'worker-1', 'worker-2', 'worker-3'];
      for (const node of nodes) {
        const lane = page.locator(`li.lane[data-lane="${node}"]`);
        expect(await lane.count()).toBe(1);
        const steps = await lane.locator('li.span[data-kind=step] .name').allTextContents();
        expect(steps.sort()).toEqual(expectedSteps(node).sort());
        expect(steps).toContain('Flip a kubelet');
        expect(await lane.locator('li.span[data-kind=kubelet-restart]').count()).toBe(1);
        expect(await lane.locator('li.span[data-kind=uninitialized-taint]').count()).toBe(1);
      }
      const workflow = page.locator('li.lane[data-lane="Workflow"] li.span[data-kind=step] .name');
      expect((await workflow.allTextContents()).sort()).toEqual(expectedSteps(undefined).sort());
      const holders = await page
        .locator('li.lane[data-lane="Cloud controllers"] li.span[data-kind=holder] .name')
        .allTextContents();
      expect(holders.at(0)).toBe('kube-controller-manager (in-tree)');
      expect(holders.at(-1)).toBe('CCM');
      expect(await page.locator('[data-summary=outcome] dd').textContent()).toBe('succeeded');
      const started = history.find((e) => e.type === 'run-started')?.at ?? 0;
      const ended = history.find((e) => e.type === 'run-ended')?.at ?? 0;
      expect(await page.locator('[data-summary=duration] dd').textContent()).toBe(
        formatDuration(ended - started),
      );
      // The benchmark's bound from the fixture's latencies: 3 × 30 ms + ⌈6 / 2⌉ × 20 ms + 10 ms, and the
      // CCM's takeover of a 1 s lease less its retry period (1000 − 1000 × 2/15 ms).
      const bound = makespanLowerBoundMs(
        { controlPlaneNodes: 3, nodes: 6, maxUnavailable: 2 },
        (await loadTwinSpec(FIXTURES.awsHaMini)).latencies,
      );
      expect(bound).toBeCloseTo(160 + 1000 - 1000 * (2 / 15));
      expect(await page.locator('[data-summary=lower-bound] dd').textContent()).toMatch(
        new RegExp(
          `^${((ended - started) / bound).toFixed(2)}× of ${formatDuration(bound)}from the twin's latencies`,
        ),
      );
      expect(await page.locator('[data-invariants=none]').count()).toBe(1);
      // Keyboard: past the skip link, Tab lands on the first span and shows its details.
      await page.keyboard.press('Tab');
      await page.keyboard.press('Tab');
      expect(await page.locator('li.span:focus .tip').isVisible()).toBe(true);
      expect(await page.locator('li.span:focus .tip').textContent()).toContain('Check the cluster');
      // Printed: no tooltip over the bars, the lanes and the table still there.
      await page.emulateMedia({ media: 'print' });
      expect(await page.locator('li.span:focus .tip').isVisible()).toBe(false);
      expect(await page.locator('li.lane[data-lane="worker-3"]').isVisible()).toBe(true);
      expect(await page.locator('table.spans').isVisible()).toBe(true);
      await page.emulateMedia({ media: 'screen' });
      await mkdir(path.dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      await page.close();
    },
  );

  it.skipIf(!withBrowser)('renders the same with the network off, and asks for nothing', async () => {
    const context = await (browser as Browser).newContext({ offline: true });
    const requests: string[] = [];
    context.on('request', (r) => {
      requests.push(r.url());
    });
    await context.route('**/*', (route) =>
      route.request().url() === fileUrl ? route.continue() : route.abort(),
    );
    const page = await context.newPage();
    await page.goto(fileUrl);
    expect(requests).toEqual([fileUrl]);
    expect(await page.evaluate(() => performance.getEntriesByType('resource').length)).toBe(0);
    expect(await page.locator('li.lane').count()).toBe(8);
    expect(await page.locator('li.span').count()).toBe((html.match(/<li class="span /g) ?? []).length);
    // Styled: the spans are laid out on their tracks, which an unstyled page would not do.
    const position = await page.evaluate('getComputedStyle(document.querySelector("li.span")).position');
    expect(position).toBe('absolute');
    await context.close();
  });
});

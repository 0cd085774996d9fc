/**
 * The headless browser some tests render in: Debian's chromium, driven by playwright-core (which never
 * downloads a browser). `.ci/run` installs it and sets CCM_MIGRATE_CI=1: there a missing browser fails
 * those tests instead of leaving them out. Elsewhere they are left out with one printed line that says why.
 */

import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = process.env.CCM_MIGRATE_CHROMIUM || '/usr/bin/chromium';

let said = false;

/** Whether the browser tests run: chromium is there, or CI requires it (then its absence fails them). */
export function browserRuns(): boolean {
  if (existsSync(CHROMIUM) || process.env.CCM_MIGRATE_CI === '1') return true;
  if (!said) {
    said = true;
    console.warn(
      `browser tests left out: ${CHROMIUM} is missing (apt-get install chromium, or name one by CCM_MIGRATE_CHROMIUM)`,
    );
  }
  return false;
}

/** Headless, with nothing of its own reaching the network: no updates, sync, QUIC or background fetches. */
export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing and CCM_MIGRATE_CI=1 requires the browser tests: apt-get install -y --no-install-recommends chromium`,
    );
  }
  // Playwright gives each launch a fresh temporary profile (user data dir), removed on close.
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

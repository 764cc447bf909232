// Drives crawld's web console in Debian's headless Chromium, as an operator
// would, for tests/integration/test_console.py (which starts the crawl and
// the webfarm, and judges what the webfarm saw). Usage:
//
//   node drive.mjs CONFIG_JSON
//
// CONFIG_JSON: {"base": "http://127.0.0.1:PORT", "token": "...",
//   "shots": "DIR", "robots_host": "http://h1.farm.test:PORT",
//   "robots_text": "/private/", "rule_url": "...", "rule_where": "FILE:1",
//   "evil_origin": "http://127.0.0.2:PORT2", "profile": "DIR",
//   "pause_hold_s": 4.5, "deadline_s": 50}
//
// Prints one JSON object per step on stdout ({"step": ..., ...}); the
// Python side asserts on them. Exits 0 when every browser-side check held,
// 1 with {"step": "error", ...} otherwise. Bounded: everything stops by
// itself at deadline_s (the browser is closed first).
import { chromium } from 'playwright-core';

const cfg = JSON.parse(process.argv[2]);
const t0 = Date.now();
const report = (step, data = {}) =>
  process.stdout.write(JSON.stringify({ step, t: Date.now() / 1000, ...data }) + '\n');

let context = null;
const hardStop = setTimeout(async () => {
  report('error', { message: `deadline of ${cfg.deadline_s} s reached` });
  try { if (context) await context.close(); } finally { process.exit(1); }
}, cfg.deadline_s * 1000);

function check(cond, message) {
  if (!cond) throw new Error(message);
}

async function textOf(page, selector, timeout = 10000) {
  const el = page.locator(selector);
  await el.waitFor({ state: 'visible', timeout });
  return (await el.textContent()) || '';
}

async function main() {
  context = await chromium.launchPersistentContext(cfg.profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
           '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
    viewport: { width: 1360, height: 900 },
    timeout: 20000,
  });
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(10000);
  const consoleErrors = [];
  // Script errors fail the test. The browser also logs every 4xx answer
  // as an error; the 401s and the 403 below are wanted, so those are not.
  page.on('console', (m) => {
    if (m.type() === 'error' &&
        !m.text().startsWith('Failed to load resource: the server responded with a status of 4')) {
      consoleErrors.push(m.text());
    }
  });
  page.on('pageerror', (e) => consoleErrors.push('pageerror: ' + e.message));
  // Only the console's own origin (and the forged page of the CSRF step,
  // fulfilled here, never fetched) may be asked for anything.
  const foreign = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.origin !== cfg.base && u.origin !== cfg.evil_origin) foreign.push(r.url());
  });

  // --- 1. The app loads without the token; the API asks for it.
  const resp = await page.goto(cfg.base + '/', { waitUntil: 'load' });
  const headers = resp.headers();
  check(resp.status() === 200, 'GET / answered ' + resp.status());
  check((headers['content-security-policy'] || '').includes("default-src 'self'"),
        'no strict CSP on /: ' + headers['content-security-policy']);
  check(headers['x-content-type-options'] === 'nosniff', 'no nosniff on /');
  await page.locator('#token-dialog').waitFor({ state: 'visible' });
  report('token_asked');

  // --- 2. A mutating action without the token is refused (401), from the
  // console's own page.
  await page.locator('#token-form button[value=clear]').click();
  await page.goto(cfg.base + '/#/control');
  await page.locator('#btn-pause').click();
  const refused = await textOf(page, '#control-result');
  check(refused.includes('401'), 'pause without token was not refused: ' + refused);
  report('untokened_pause_refused', { text: refused.trim() });
  if (await page.locator('#token-dialog').isVisible()) {
    await page.locator('#token-input').fill(cfg.token);
    await page.locator('#token-save').click();
  } else {
    await page.locator('#token-button').click();
    await page.locator('#token-input').fill(cfg.token);
    await page.locator('#token-save').click();
  }
  report('token_given');

  // --- 3. The overview updates while the crawl runs.
  await page.goto(cfg.base + '/#/overview');
  const pagesText = async () => (await textOf(page, '#ov-pages')).replace(/[^0-9]/g, '');
  const first = Number(await pagesText());
  let later = first;
  for (let i = 0; i < 40 && later <= first; i++) {
    await page.waitForTimeout(500);
    later = Number(await pagesText());
  }
  check(later > first, `overview pages did not grow: ${first} -> ${later}`);
  const workers = await page.locator('#ov-workers tbody tr').count();
  report('overview_updates', { first, later, workers });
  // A few more samples for the chart, then the screenshot.
  await page.waitForTimeout(4500);
  await page.screenshot({ path: cfg.shots + '/console-overview.png', fullPage: true });
  report('shot', { name: 'console-overview.png' });

  // --- 4. Hosts table, sortable; a host page shows its robots rules.
  await page.goto(cfg.base + '/#/hosts?sort=fetched&order=desc');
  await page.locator('#hosts-table tbody tr').first().waitFor();
  const rows = await page.locator('#hosts-table tbody tr').count();
  check(rows >= 2, 'hosts table has ' + rows + ' rows');
  const shown = await textOf(page, '#hosts-info');
  report('hosts_table', { rows, info: shown });
  await page.goto(cfg.base + '/#/host/' + encodeURIComponent(cfg.robots_host));
  const robots = await textOf(page, '#host-robots');
  check(robots.includes(cfg.robots_text),
        `host page robots rules lack ${cfg.robots_text}: ${robots}`);
  const name = await textOf(page, '#host-name');
  report('host_robots', { host: name, robots });
  await page.screenshot({ path: cfg.shots + '/console-host.png', fullPage: true });
  report('shot', { name: 'console-host.png' });

  // --- 5. A rule test names the deciding rule's file:line.
  await page.goto(cfg.base + '/#/rules');
  await page.locator('#rule-url').fill(cfg.rule_url);
  await page.locator('#rule-test').click();
  const where = await textOf(page, '#rule-where');
  check(where.trim() === cfg.rule_where, `rule test named ${where}, not ${cfg.rule_where}`);
  const verdict = await textOf(page, '#rule-verdict');
  report('rule_test', { where: where.trim(), verdict: verdict.trim() });
  await page.locator('#rules-filter tbody tr').first().waitFor();
  await page.screenshot({ path: cfg.shots + '/console-rules.png', fullPage: true });

  // --- 6. Documents: the feed's latest records; one opened from its WARC
  // is shown as text (the page's own markup stays inert).
  await page.goto(cfg.base + '/#/docs');
  await page.locator('#docs-table tbody tr').first().waitFor();
  const records = await page.locator('#docs-table tbody tr').count();
  await page.locator('#docs-table tbody tr a').first().click();
  const recordBody = await textOf(page, '#record-body');
  const inert = await page.evaluate(() => document.querySelector('#record-body').children.length === 0);
  check(inert, 'the record body was rendered as markup');
  report('record_opened', { records, body_start: recordBody.slice(0, 200), inert });

  // --- 7. Pause, hold, resume: the Python side judges the request log.
  await page.goto(cfg.base + '/#/control');
  await page.locator('#btn-pause').click();
  await page.locator('#control-result pre').waitFor();
  const paused = await textOf(page, '#control-result');
  check(paused.includes('"paused"'), 'pause answered: ' + paused);
  report('paused', { answer: JSON.parse(paused).state });
  await page.waitForTimeout(cfg.pause_hold_s * 1000);
  const badge = await textOf(page, '#state-badge');
  report('resuming', { badge });
  await page.locator('#btn-resume').click();
  await page.waitForFunction(() =>
    (document.querySelector('#control-result') || {}).textContent.includes('"running"'));
  report('resumed');
  await page.screenshot({ path: cfg.shots + '/console-control.png', fullPage: true });

  // --- 8. A cross-site form POST (another site's page in the same
  // browser, its form aimed at the API) is refused.
  await page.route(cfg.evil_origin + '/**', (route) => route.fulfill({
    contentType: 'text/html',
    body: `<!doctype html><form id=f method=POST action="${cfg.base}/api/pause"
             enctype="text/plain"><input name='{"a":"' value='"}'></form>`,
  }));
  await page.goto(cfg.evil_origin + '/evil.html');
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.url() === cfg.base + '/api/pause'),
    page.evaluate(() => document.getElementById('f').submit()),
  ]);
  const body = await answer.text();
  check(answer.status() === 403, `cross-site POST answered ${answer.status()}: ${body}`);
  report('cross_site_refused', { status: answer.status(), body });

  check(foreign.length === 0, 'requests to other origins: ' + foreign.join(' '));
  check(consoleErrors.length === 0, 'console errors: ' + consoleErrors.join(' | '));
  report('done', { seconds: (Date.now() - t0) / 1000 });
}

main().then(async () => {
  clearTimeout(hardStop);
  await context.close();
  process.exit(0);
}, async (e) => {
  clearTimeout(hardStop);
  report('error', { message: String(e && e.stack || e) });
  try {
    const p = context && context.pages()[0];
    if (p) await p.screenshot({ path: cfg.shots + '/console-failure.png', fullPage: true });
  } catch (_) { /* the failure itself is what matters */ }
  try { if (context) await context.close(); } finally { process.exit(1); }
});

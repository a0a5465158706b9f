// tests/console/console.mjs - the web console in Debian's chromium (headless),
// driven by puppeteer-core; run by tests/integration/check_console.c, which
// starts outboxd + stellar-sim, makes the keys and the ops and passes them in
// the environment:
//   CONSOLE_URL, CONSOLE_KEY_READ, CONSOLE_KEY_WRITE (outbox:read + write),
//   CONSOLE_OP_CONFIRMED, CONSOLE_OP_FAILED (failed on chain, its user halted),
//   CONSOLE_RESULT_CODE (that op's last result code), CONSOLE_OUTBOXCTL,
//   CONSOLE_INSTANCE; CONSOLE_CHROMIUM overrides /usr/bin/chromium;
//   CONSOLE_SCREENSHOTS=DIR saves the pages as PNGs there.
// Every step waits for a condition (a selector, a text, numbers that agree)
// with a generous deadline; nothing is timed against a limit. It prints one
// JSON line: the page's weight (asserted under 100 KB: deterministic) and the
// overview's render time after a load (measured, never asserted).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set (run by check_console)`);
  return v;
};
const BASE = env('CONSOLE_URL');
const KEY_READ = env('CONSOLE_KEY_READ');
const KEY_WRITE = env('CONSOLE_KEY_WRITE');
const OP_CONFIRMED = env('CONSOLE_OP_CONFIRMED');
const OP_FAILED = env('CONSOLE_OP_FAILED');
const RESULT_CODE = env('CONSOLE_RESULT_CODE');
const OUTBOXCTL = env('CONSOLE_OUTBOXCTL');
const INSTANCE = env('CONSOLE_INSTANCE');
const CHROMIUM = process.env.CONSOLE_CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.CONSOLE_SCREENSHOTS; // a directory: PNGs of the pages, for a human
const shot = async (page, name) => {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, name + '.png'), fullPage: true });
};
const WAIT = 120000; // a busy 2-core machine: generous, and never a measure
const WEIGHT_MAX = 100 * 1024;
const LOADS = 5;

const log = (m) => console.error(`console: ${m}`);
function check(ok, what) {
  if (!ok) throw new Error(what);
}

// Poll fn until it returns a truthy value; the last failure is in the error.
async function until(what, fn) {
  const end = Date.now() + WAIT;
  let last = '';
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e.message;
    }
    if (Date.now() > end) throw new Error(`waited ${WAIT / 1000} s for ${what}${last ? ': ' + last : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const text = (page, sel) => page.$eval(sel, (e) => e.textContent.trim());
const nav = (page, hash) => page.evaluate((h) => { location.hash = h; }, hash);

async function login(page, key) {
  await page.goto(BASE, { waitUntil: 'load' });
  await page.evaluate(() => sessionStorage.clear());
  await page.goto(BASE, { waitUntil: 'load' });
  await page.waitForSelector('#login-view:not([hidden]) #key', { timeout: WAIT });
  check((await page.$$('#view *')).length === 0, 'data is shown without a key');
  await page.type('#key', key);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('#ov-confirmed-total', { timeout: WAIT });
}

// The overview's numbers against `outboxctl stats --json` of the same instance.
async function overviewMatchesStats(page) {
  await until('the overview to agree with outboxctl stats', async () => {
    const stats = JSON.parse(execFileSync(OUTBOXCTL, ['stats', '--json', '--instance', INSTANCE],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    const page_ = await page.evaluate(() => ({
      confirmed: document.querySelector('#ov-confirmed-total').textContent.trim(),
      failed: document.querySelector('#ov-failed-total').textContent.trim(),
      procs: [...document.querySelectorAll('#procs tr[data-role]')].map((r) => ({
        role: r.dataset.role, index: Number(r.dataset.index),
        pid: r.querySelector('.pid').textContent.trim(),
        restarts: r.querySelector('.restarts').textContent.trim(),
      })),
    }));
    const t = stats.totals;
    if (page_.confirmed !== String(t.outbox_ops_confirmed_total)) throw new Error(`confirmed ${page_.confirmed} vs ${t.outbox_ops_confirmed_total}`);
    if (page_.failed !== String(t.outbox_ops_failed_total)) throw new Error(`failed ${page_.failed} vs ${t.outbox_ops_failed_total}`);
    if (page_.procs.length !== stats.processes.length) throw new Error(`${page_.procs.length} process rows vs ${stats.processes.length}`);
    for (const p of stats.processes) {
      const row = page_.procs.find((r) => r.role === p.role && r.index === p.index);
      if (!row) throw new Error(`no row for ${p.role} ${p.index}`);
      if (row.pid !== String(p.pid) || row.restarts !== String(p.restarts))
        throw new Error(`${p.role} ${p.index}: pid ${row.pid}/${p.pid}, restarts ${row.restarts}/${p.restarts}`);
    }
    return t.outbox_ops_confirmed_total >= 1 && t.outbox_ops_failed_total >= 1;
  });
}

// Loads of the logged-in page: bytes of the page, script and stylesheet, and
// the ms from navigation to the first overview drawn.
async function measure(page) {
  const files = new Set();
  const renders = [];
  let bytes = 0;
  for (let i = 0; i < LOADS; i++) {
    const bodies = [];
    const onResponse = (r) => {
      if (!r.url().startsWith(BASE) || r.url().includes('/api/')) return;
      files.add(new URL(r.url()).pathname);
      bodies.push(r.buffer().then((b) => b.length));
    };
    page.on('response', onResponse);
    await page.reload({ waitUntil: 'load' });
    await page.waitForFunction(() => document.body.dataset.overviewMs, { timeout: WAIT });
    page.off('response', onResponse);
    bytes = (await Promise.all(bodies)).reduce((a, b) => a + b, 0);
    renders.push(await page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      const api = performance.getEntriesByType('resource')
        .find((e) => e.name.includes('/api/console/overview'));
      return {
        total: Number(document.body.dataset.overviewMs),
        dom: nav ? nav.domContentLoadedEventEnd : null,
        api: api ? api.responseEnd - api.startTime : null,
      };
    }));
  }
  renders.sort((a, b) => a.total - b.total);
  return { bytes, files: [...files].sort(), renders };
}

async function run(browser) {
  const page = await browser.newPage();
  const outside = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(BASE) && !r.url().startsWith('data:')) outside.push(r.url());
  });
  const cspErrors = [];
  // Chromium reports every 4xx answer as a console error: the forged retry's
  // 403 and the cancel's 409 are expected; anything else (a CSP refusal, an
  // exception) is not
  page.on('console', (m) => {
    if (m.type() === 'error' && !/^Failed to load resource: the server responded with a status of (403|409)/.test(m.text()))
      cspErrors.push(m.text());
  });
  page.on('pageerror', (e) => cspErrors.push(e.message));

  // no key, no data; a read key logs in
  log('read key: overview');
  await login(page, KEY_READ);
  await until('the key named in the header', async () => (await text(page, '#who')).startsWith('reader'));
  await overviewMatchesStats(page);
  const m = await measure(page);
  await shot(page, 'overview');
  check(m.files.join(',') === '/,/console/console.css,/console/console.js', `page files: ${m.files}`);
  check(m.bytes < WEIGHT_MAX, `the page weighs ${m.bytes} bytes, over ${WEIGHT_MAX}`);

  // the failed op from the list, its result code; no buttons for a read key
  log('read key: the failed op');
  // the list, a page of one op at a time: the newest, then the next by its cursor
  await nav(page, '#/ops?limit=1');
  await page.waitForSelector(`#ops tr[data-id="${OP_FAILED}"]`, { timeout: WAIT });
  check((await page.$$('#ops tr[data-id]')).length === 1, 'a page of one shows more');
  await page.click('#next-page');
  await page.waitForSelector(`#ops tr[data-id="${OP_CONFIRMED}"]`, { timeout: WAIT });
  check((await page.$$('#ops tr[data-id]')).length === 1, 'the second page of one shows more');
  // the filter form: FAILED only
  await nav(page, '#/ops');
  await until('the whole list (both ops, the page before showed one)', async () =>
    (await page.$$('#ops tr[data-id]')).length === 2 && !(await page.$eval('#f-status', (e) => e.value)));
  await page.select('#f-status', 'FAILED');
  await page.click('#filters button[type=submit]');
  await until('the list filtered to FAILED', async () => {
    const ids = await page.$$eval('#ops tr[data-id]', (rs) => rs.map((r) => r.dataset.id));
    return ids.length === 1 && ids[0] === OP_FAILED;
  });
  await page.click(`#ops tr[data-id="${OP_FAILED}"] a`);
  await page.waitForSelector(`#op-title[data-id="${OP_FAILED}"] ~ .scroll #attempts .result-code`, { timeout: WAIT });
  check((await text(page, '#op-status')) === 'FAILED', 'the op is not shown FAILED');
  const codes = await page.$$eval('#attempts .result-code', (es) => es.map((e) => e.textContent.trim()));
  check(codes.includes(RESULT_CODE), `result codes ${codes} lack ${RESULT_CODE}`);
  await shot(page, 'op-failed');
  check((await page.$('#btn-retry')) === null && (await page.$('#btn-cancel')) === null,
    'a read key is offered retry or cancel');

  // a forged retry with the read key, from the page: 403 (and audited)
  const forged = await page.evaluate(async (id) => {
    const r = await fetch(`/api/admin/outbox/${id}/retry`, {
      method: 'POST', headers: { Authorization: 'Bearer ' + sessionStorage.getItem('outboxd.apiKey') },
    });
    return r.status;
  }, OP_FAILED);
  check(forged === 403, `a forged retry with a read key answered ${forged}`);

  // a write key: retry with its confirmation step, the op back to PENDING
  log('write key: retry');
  await page.click('#logout');
  await page.waitForSelector('#login-view:not([hidden])', { timeout: WAIT });
  await login(page, KEY_WRITE);
  await nav(page, '#/op/' + OP_FAILED);
  await page.waitForSelector(`#op-title[data-id="${OP_FAILED}"] ~ #actions #btn-retry`, { timeout: WAIT });
  await page.click('#btn-retry');
  await page.waitForSelector('#btn-confirm', { timeout: WAIT });
  await page.click('#btn-confirm');
  await until('the retried op shown PENDING', async () =>
    (await text(page, '#op-status')) === 'PENDING' &&
    (await text(page, '#action-result')).includes('PENDING'));
  await page.waitForSelector('#why', { timeout: WAIT });
  const why = await text(page, '#why');
  check(why.startsWith(`Op ${OP_FAILED} is not on the network because`), `why: ${why}`);

  // the overview counts it: one CRITICAL op PENDING (its user is halted), nothing else waiting
  await nav(page, '#/');
  await until('the retried op in the overview\'s depth', async () =>
    (await text(page, '#depth-PENDING-CRITICAL')) === '1' && (await text(page, '#depth-PENDING')) === '1' &&
    (await text(page, '#depth-SUBMITTED')) === '0' && (await text(page, '#depth-HELD')) === '0');

  // cancel of a CONFIRMED op: refused, the 409 reason shown
  log('write key: a refused cancel');
  await nav(page, '#/op/' + OP_CONFIRMED);
  await page.waitForSelector(`#op-title[data-id="${OP_CONFIRMED}"] ~ #actions #btn-cancel`, { timeout: WAIT });
  check((await text(page, '#op-status')) === 'CONFIRMED', 'the confirmed op is not CONFIRMED');
  await page.click('#btn-cancel');
  await page.waitForSelector('#btn-confirm', { timeout: WAIT });
  await page.click('#btn-confirm');
  await until('the 409 reason', async () => (await text(page, '#action-result')).includes('(409)'));
  const reason = await text(page, '#action-result');
  check(/refused \(409\): .+/.test(reason), `cancel: ${reason}`);
  await shot(page, 'op-cancel-refused');

  check(outside.length === 0, `requests outside the gateway: ${outside}`);
  check(cspErrors.length === 0, `errors on the page: ${cspErrors.join(' | ')}`);
  await page.close();
  return { m, why, reason };
}

const dir = mkdtempSync(join(tmpdir(), 'outboxd-chromium-'));
let browser;
try {
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: dir,
    timeout: WAIT,
    protocolTimeout: WAIT * 2,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const { m } = await run(browser);
  const r1 = (v) => (v === null ? null : Number(v.toFixed(1)));
  const median = m.renders[Math.floor(m.renders.length / 2)];
  console.log(JSON.stringify({
    bench: 'console', page_bytes: m.bytes, page_limit_bytes: WEIGHT_MAX,
    overview_render_ms_median: r1(median.total),
    overview_render_ms_min: r1(m.renders[0].total),
    overview_render_ms_max: r1(m.renders[m.renders.length - 1].total),
    median_dom_content_loaded_ms: r1(median.dom), median_overview_fetch_ms: r1(median.api),
    loads: LOADS, load_average: Number(loadavg()[0].toFixed(1)),
    note: 'navigation start to the first overview drawn, loopback; measured, not asserted',
  }));
  log('OK');
} catch (e) {
  console.error(`console: FAILED: ${e.message}`);
  process.exitCode = 1;
} finally {
  if (browser) await browser.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}

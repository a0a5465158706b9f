// outboxd console: the whole client, vanilla JS, no build step, no framework.
//
// Every request goes to this gateway with the operator's API key as the
// Bearer header; the data comes from GET /api/console/overview and the admin
// API (/api/admin/outbox...), so a retry or cancel from here is the same
// audited call as from curl. Data reaches the page only through textContent
// and attributes (never innerHTML): an op's fields are hostile input.
'use strict';

(function () {
  const KEY = 'outboxd.apiKey';
  const POLL_MS = 1000;
  const PRIOS = ['CRITICAL', 'NORMAL', 'LOW'];
  const STATUSES = ['PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'CANCELLED', 'HELD'];
  const KINDS = ['DEPOSIT', 'WITHDRAW', 'REBALANCE', 'REFERRAL_REWARD'];
  const KEY_RE = /^obx_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/;

  let me = null; // the key's {name, prefix, scopes}, from the overview
  let gen = 0; // bumped by every navigation: a stale answer is dropped
  let timer = null;
  let overviewSeen = false;
  let flash = ''; // what the last action did, shown by the op page it reloads

  const $ = (id) => document.getElementById(id);
  // The view's new content; null and undefined are left out (replaceChildren would write "null").
  const show = (...nodes) => $('view').replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined));

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined) continue;
      e.append(kid instanceof Node ? kid : String(kid));
    }
    return e;
  }

  const num = (v, d) => (v === null || v === undefined ? '–' : Number(v).toFixed(d || 0));
  const secs = (v) => (v === null || v === undefined ? '–' : Number(v).toFixed(2) + ' s');
  const when = (v) => (v ? String(v).replace('T', ' ').replace(/\.\d+/, '').slice(0, 19) : '–');
  const canWrite = () => !!me && me.scopes.indexOf('outbox:write') >= 0;

  class AuthError extends Error {}

  // One call; 401 logs out (the key is gone or revoked). Answers {status, body}.
  async function api(method, path) {
    const key = sessionStorage.getItem(KEY);
    if (!key) throw new AuthError('no key');
    const res = await fetch(path, {
      method,
      headers: { Authorization: 'Bearer ' + key },
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
    let body = null;
    try {
      body = await res.json();
    } catch (e) {
      body = null;
    }
    if (res.status === 401) {
      logout(errorText(body, 'the API key was refused'));
      throw new AuthError('401');
    }
    return { status: res.status, body };
  }

  function errorText(body, fallback) {
    return body && body.error && body.error.message ? body.error.message : fallback;
  }

  // ---- login ----

  function logout(why) {
    sessionStorage.removeItem(KEY);
    me = null;
    stopPoll();
    gen++;
    $('login-error').textContent = why || '';
    showLogin();
  }

  function showLogin() {
    $('nav').hidden = true;
    show();
    $('login-view').hidden = false;
    $('key').focus();
  }

  async function login(ev) {
    ev.preventDefault();
    const key = $('key').value.trim();
    if (!KEY_RE.test(key)) {
      $('login-error').textContent = 'this is not an outboxd API key (obx_<12 hex>_<43 characters>)';
      return;
    }
    sessionStorage.setItem(KEY, key);
    $('key').value = '';
    try {
      const r = await api('GET', '/api/console/overview');
      if (r.status !== 200) {
        logout(errorText(r.body, 'the gateway answered ' + r.status));
        return;
      }
      me = r.body.key;
      $('login-error').textContent = '';
      route();
    } catch (e) {
      if (!(e instanceof AuthError)) logout('the gateway did not answer: ' + e.message);
    }
  }

  // ---- navigation ----

  function stopPoll() {
    if (timer) clearTimeout(timer);
    timer = null;
  }

  function route() {
    stopPoll();
    const g = ++gen;
    if (!sessionStorage.getItem(KEY)) return showLogin();
    $('login-view').hidden = true;
    $('nav').hidden = false;
    const h = location.hash || '#/';
    let m;
    $('nav-overview').className = h === '#/' ? 'active' : '';
    $('nav-ops').className = h.startsWith('#/op') ? 'active' : '';
    const done = (p) =>
      p.catch((e) => {
        if (!(e instanceof AuthError) && g === gen)
          show(el('p', { class: 'error' }, 'error: ' + e.message));
      });
    if ((m = /^#\/op\/([1-9][0-9]{0,17})$/.exec(h))) return done(viewOp(g, m[1]));
    if (h === '#/ops' || h.startsWith('#/ops?')) return done(viewOps(g, h.slice(6)));
    return done(viewOverview(g));
  }

  async function whoami() {
    if (me) return;
    const r = await api('GET', '/api/console/overview');
    if (r.status === 200) me = r.body.key;
  }

  function setWho() {
    $('who').textContent = me ? me.name + ' (' + me.scopes.join(', ') + ')' : '';
  }

  // ---- overview ----

  // Polled every POLL_MS while shown; a failed poll (the gateway restarting,
  // a 503) is said on the page and the next one tried; a 401 logs out.
  async function viewOverview(g) {
    try {
      const r = await api('GET', '/api/console/overview');
      if (g !== gen) return;
      if (r.status !== 200) {
        overviewError(errorText(r.body, 'the overview answered ' + r.status));
      } else {
        me = r.body.key;
        setWho();
        renderOverview(r.body);
        if (!overviewSeen) {
          overviewSeen = true;
          performance.mark('outboxd-overview');
          document.body.dataset.overviewMs = String(performance.now());
        }
      }
    } catch (e) {
      if (e instanceof AuthError || g !== gen) return;
      overviewError('the gateway did not answer: ' + e.message);
    }
    timer = setTimeout(() => {
      if (g === gen) viewOverview(g);
    }, POLL_MS);
  }

  // Keep the last overview on the page, marked as old.
  function overviewError(msg) {
    let p = $('ov-error');
    if (!p) {
      p = el('p', { class: 'error', id: 'ov-error', role: 'alert' });
      $('view').prepend(p);
    }
    p.textContent = msg + ' (retrying every second; the numbers below are older)';
  }

  function depthCard(d) {
    const rows = ['PENDING', 'SUBMITTED', 'HELD'].map((st) => {
      const by = (d && d[st]) || {};
      const total = PRIOS.reduce((s, p) => s + Number(by[p] || 0), 0);
      return el('tr', { class: st === 'HELD' && total > 0 ? 'held' : null },
        el('td', {}, st),
        PRIOS.map((p) => el('td', { class: 'num', id: 'depth-' + st + '-' + p }, num(by[p]))),
        el('td', { class: 'num', id: 'depth-' + st }, String(total)));
    });
    return el('div', { class: 'card' }, el('h3', {}, 'Queue depth'),
      el('table', {}, el('tr', {}, el('th', {}, 'status'),
        PRIOS.map((p) => el('th', { class: 'num' }, p)), el('th', { class: 'num' }, 'total')),
      rows));
  }

  function opsCard(o) {
    return el('div', { class: 'card' }, el('h3', {}, 'Ops decided'),
      el('table', {},
        el('tr', {}, el('th', {}), el('th', { class: 'num' }, 'per second'),
          el('th', { class: 'num' }, 'since start')),
        el('tr', {}, el('td', {}, 'confirmed'),
          el('td', { class: 'num big', id: 'ov-confirmed-rate' }, num(o.confirmedPerS, 1)),
          el('td', { class: 'num', id: 'ov-confirmed-total' }, String(o.confirmedTotal))),
        el('tr', {}, el('td', {}, 'failed'),
          el('td', { class: 'num big', id: 'ov-failed-rate' }, num(o.failedPerS, 1)),
          el('td', { class: 'num', id: 'ov-failed-total' }, String(o.failedTotal)))));
  }

  function feeCard(f) {
    f = f || {};
    const row = (k, id, v) => el('tr', {}, el('td', {}, k), el('td', { class: 'num', id }, v));
    return el('div', { class: 'card' }, el('h3', {}, 'Fees and congestion'),
      el('table', {},
        row('recommended base fee', 'ov-fee-rec', num(f.recommendedBaseFee)),
        row('aggressive base fee', 'ov-fee-agg', num(f.aggressiveBaseFee)),
        row('congestion', 'ov-congestion', f.congestionLevel || '–'),
        row('ledger capacity used', 'ov-capacity', f.ledgerCapacityUsage === null ||
          f.ledgerCapacityUsage === undefined ? '–' : num(f.ledgerCapacityUsage * 100) + ' %'),
        row('latest ledger', 'ov-ledger', num(f.latestLedger)),
        row('snapshot', 'ov-stale', f.stale ? 'STALE: the default fee is bid' : 'fresh')));
  }

  function procCard(procs) {
    return el('div', { class: 'card' }, el('h3', {}, 'Processes'),
      el('table', { id: 'procs' },
        el('tr', {}, ['role', 'pid', 'state', 'heartbeat', 'restarts', 'started']
          .map((h, i) => el('th', { class: i === 1 || i === 3 || i === 4 ? 'num' : null }, h))),
        (procs || []).map((p) => el('tr', {
          'data-role': p.role, 'data-index': p.index,
          class: p.state !== 'running' && p.role !== 'supervisor' ? 'held' : null,
        },
        el('td', {}, p.role + (p.role === 'worker' ? ' ' + p.index : '')),
        el('td', { class: 'num pid' }, String(p.pid)),
        el('td', { class: 'state' }, p.state),
        el('td', { class: 'num' }, p.heartbeatAgeMs < 0 ? '–' : num(p.heartbeatAgeMs) + ' ms ago'),
        el('td', { class: 'num restarts' }, String(p.restarts)),
        el('td', {}, p.startedAt ? when(new Date(p.startedAt).toISOString()) : '–')))));
  }

  function heldCard(held) {
    return el('div', { class: 'card', id: 'held' },
      el('h3', { class: held.length ? 'held' : null },
        'Held ops: executed, outcome unknown (' + held.length + (held.length >= 20 ? '+' : '') + ')'),
      held.length
        ? el('table', {}, held.map((o) => el('tr', { class: 'held' },
          el('td', {}, el('a', { href: '#/op/' + o.id }, 'op ' + o.id)),
          el('td', {}, o.kind), el('td', {}, o.priority),
          el('td', { class: 'wrap' }, o.holdReason || ''))))
        : el('p', { class: 'muted' }, 'none'));
  }

  function renderOverview(b) {
    const canvas = el('canvas', { id: 'latency', width: 800, height: 220 });
    show(el('h2', {}, 'Overview'),
      el('p', { class: 'muted' }, 'as of ', el('span', { id: 'ov-at' }, when(b.at)), ', every second'),
      el('div', { class: 'grid' }, depthCard(b.depth), opsCard(b.ops || {}), feeCard(b.fees)),
      el('div', { class: 'card' },
        el('h3', {}, 'Enqueue to confirmation, p50 by priority (each point: ' +
          b.sampleMs / 1000 + ' s, the last 5 minutes)'),
        el('div', { class: 'legend' }, PRIOS.map((p) => el('span', { class: p }, '━ ' + p))),
        canvas),
      heldCard(b.held || []), procCard(b.processes));
    // the server's clock, not the browser's: the points are stamped by the gateway
    drawLatency(canvas, b.latency || [], Date.parse(b.at) || Date.now());
  }

  function drawLatency(c, pts, now) {
    const ratio = window.devicePixelRatio || 1;
    const w = c.clientWidth || 800, h = c.clientHeight || 220;
    c.width = w * ratio;
    c.height = h * ratio;
    const ctx = c.getContext('2d');
    ctx.scale(ratio, ratio);
    const css = getComputedStyle(document.documentElement);
    const color = { CRITICAL: css.getPropertyValue('--crit'), NORMAL: css.getPropertyValue('--norm'),
      LOW: css.getPropertyValue('--low') };
    const L = 48, R = 8, T = 8, B = 20;
    const span = 5 * 60 * 1000;
    let max = 1;
    for (const p of pts) for (const k of PRIOS) if (p.p50[k] > max) max = p.p50[k];
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillStyle = '#667085';
    ctx.strokeStyle = '#d8dde6';
    ctx.beginPath();
    ctx.moveTo(L, T);
    ctx.lineTo(L, h - B);
    ctx.lineTo(w - R, h - B);
    ctx.stroke();
    ctx.fillText(max.toFixed(1) + ' s', 4, T + 8);
    ctx.fillText('0 s', 4, h - B);
    ctx.fillText('5 min ago', L, h - 4);
    ctx.fillText('now', w - R - 22, h - 4);
    if (!pts.length) ctx.fillText('no samples yet', L + 10, T + 20);
    const x = (t) => L + (w - L - R) * Math.max(0, 1 - (now - t) / span);
    const y = (v) => h - B - (h - B - T) * (v / max);
    for (const k of PRIOS) {
      ctx.strokeStyle = color[k];
      ctx.lineWidth = 2;
      ctx.beginPath();
      let up = false;
      for (const p of pts) {
        const v = p.p50[k];
        if (v === null) { up = false; continue; }
        if (up) ctx.lineTo(x(p.at), y(v));
        else ctx.moveTo(x(p.at), y(v));
        up = true;
      }
      ctx.stroke();
      ctx.fillStyle = color[k]; // a dot per point: an interval alone still shows
      for (const p of pts) {
        if (p.p50[k] === null) continue;
        ctx.beginPath();
        ctx.arc(x(p.at), y(p.p50[k]), 2.5, 0, 2 * Math.PI);
        ctx.fill();
      }
    }
  }

  // ---- ops ----

  function select(name, values, cur) {
    return el('select', { name, id: 'f-' + name },
      el('option', { value: '' }, name + ': any'),
      values.map((v) => el('option', { value: v, selected: v === cur }, v)));
  }

  async function viewOps(g, qs) {
    const q = new URLSearchParams(qs);
    const args = new URLSearchParams();
    for (const k of ['status', 'kind', 'priority', 'userId', 'limit', 'cursor'])
      if (q.get(k)) args.set(k, q.get(k));
    const form = el('form', { class: 'filters', id: 'filters' },
      select('status', STATUSES, q.get('status')), select('kind', KINDS, q.get('kind')),
      select('priority', PRIOS, q.get('priority')),
      el('input', { name: 'userId', id: 'f-userId', placeholder: 'user id', maxlength: 128,
        value: q.get('userId') || '' }),
      el('button', { type: 'submit' }, 'Filter'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const f = new URLSearchParams();
      for (const [k, v] of new FormData(form)) if (v) f.set(k, v);
      if (q.get('limit')) f.set('limit', q.get('limit'));
      location.hash = '#/ops?' + f.toString();
    });
    const r = await api('GET', '/api/admin/outbox' + (args.toString() ? '?' + args : ''));
    if (g !== gen) return;
    const body = [el('h2', {}, 'Ops'), form];
    if (r.status !== 200) {
      body.push(el('p', { class: 'error' }, errorText(r.body, 'the list answered ' + r.status)));
    } else {
      body.push(el('div', { class: 'scroll' }, el('table', { id: 'ops' },
        el('tr', {}, ['id', 'kind', 'priority', 'status', 'user', 'attempts', 'bumps', 'updated']
          .map((h) => el('th', {}, h))),
        r.body.items.map((o) => el('tr', { 'data-id': o.id },
          el('td', {}, el('a', { href: '#/op/' + o.id }, String(o.id))),
          el('td', {}, o.kind), el('td', {}, o.priority),
          el('td', { class: 'status-' + o.status }, o.status), el('td', {}, o.userId),
          el('td', { class: 'num' }, String(o.attempts)), el('td', { class: 'num' }, String(o.feeBumps)),
          el('td', {}, when(o.updatedAt)))))));
      if (!r.body.items.length) body.push(el('p', { class: 'muted' }, 'no op matches'));
      if (r.body.nextCursor) {
        const next = new URLSearchParams(args);
        next.set('cursor', r.body.nextCursor);
        body.push(el('p', {}, el('a', { id: 'next-page', href: '#/ops?' + next }, 'Older ops →')));
      }
    }
    show(...body);
  }

  // ---- one op ----

  function field(k, v, id) {
    return el('tr', {}, el('th', {}, k), el('td', { class: 'wrap', id }, v === null || v === undefined ? '–' : String(v)));
  }

  async function viewOp(g, id) {
    await whoami();
    const r = await api('GET', '/api/admin/outbox/' + id);
    if (g !== gen) return;
    setWho();
    if (r.status !== 200) {
      show(el('h2', {}, 'Op ' + id),
        el('p', { class: 'error' }, errorText(r.body, 'the op answered ' + r.status)));
      return;
    }
    const o = r.body.op;
    const said = flash;
    flash = '';
    let why = null;
    if (o.status === 'PENDING') {
      const w = await api('GET', '/api/admin/outbox/' + id + '/why');
      if (g !== gen) return;
      why = w.status === 200 ? w.body.why : errorText(w.body, 'why answered ' + w.status);
    }
    show(
      el('h2', { id: 'op-title', 'data-id': o.id }, 'Op ' + o.id + ' ',
        el('span', { id: 'op-status', class: 'status-' + o.status }, o.status)),
      why ? el('p', { class: 'why', id: 'why' }, why) : null,
      canWrite() ? actions(g, o) : null,
      el('p', { id: 'action-result', role: 'status' }, said),
      el('table', { id: 'op-fields' },
        field('kind', o.kind), field('priority', o.priority), field('user', o.userId),
        field('business record', o.businessRecordId), field('signer', o.signer),
        field('idempotency key', o.idempotencyKey), field('payload', JSON.stringify(o.payload)),
        field('attempts', o.attempts), field('fee bumps', o.feeBumps),
        field('last error', o.lastError, 'op-last-error'), field('hold reason', o.holdReason),
        field('transaction', o.txHash), field('created', when(o.createdAt)),
        field('updated', when(o.updatedAt)), field('confirmed', when(o.confirmedAt)),
        field('next attempt', when(o.nextAttemptAt))),
      el('h3', {}, 'Attempts'),
      el('div', { class: 'scroll' }, el('table', { id: 'attempts' },
        el('tr', {}, ['#', 'bump', 'envelope hash', 'fee', 'sequence', 'outcome', 'result code',
          'submitted', 'ledger'].map((h) => el('th', {}, h))),
        r.body.attempts.map((a) => el('tr', {},
          el('td', {}, String(a.attemptNo)), el('td', {}, String(a.bumpNo)),
          el('td', { class: 'mono wrap' }, a.txHash || '–'), el('td', { class: 'num' }, num(a.fee)),
          el('td', { class: 'num' }, a.sourceSequence === null ? '–' : String(a.sourceSequence)),
          el('td', { class: 'outcome' }, a.outcome || 'undecided'),
          el('td', { class: 'result-code' }, a.resultCode || '–'),
          el('td', {}, when(a.submittedAt)), el('td', {}, num(a.landedLedger)))))),
      el('h3', {}, 'Events'),
      el('table', { id: 'events' },
        el('tr', {}, ['seq', 'event', 'from', 'to', 'at'].map((h) => el('th', {}, h))),
        r.body.events.map((e) => el('tr', {},
          el('td', {}, String(e.seq)), el('td', {}, e.type), el('td', {}, e.from || '–'),
          el('td', {}, e.to || '–'), el('td', {}, when(e.at))))));
  }

  // Retry and cancel: a button, then a confirmation, then the admin API's answer.
  function actions(g, o) {
    const box = el('div', { class: 'actions', id: 'actions' });
    const plain = () => box.replaceChildren(
      el('button', { type: 'button', id: 'btn-retry', onclick: () => confirmStep('retry') }, 'Retry…'),
      el('button', { type: 'button', id: 'btn-cancel', onclick: () => confirmStep('cancel') }, 'Cancel…'));
    const confirmStep = (what) => box.replaceChildren(
      el('span', {}, (what === 'retry' ? 'Send op ' + o.id + ' back to PENDING?'
        : 'Cancel op ' + o.id + '? Only a PENDING op can be cancelled.')),
      el('button', { type: 'button', id: 'btn-confirm', class: 'danger', onclick: () => act(what) },
        'Yes, ' + what),
      el('button', { type: 'button', id: 'btn-back', onclick: plain }, 'No'));
    const act = async (what) => {
      box.replaceChildren(el('span', { class: 'muted' }, what + '…'));
      const r = await api('POST', '/api/admin/outbox/' + o.id + '/' + what);
      if (g !== gen) return;
      if (r.status === 200) {
        flash = what + ': done, the op is ' + r.body.op.status;
        route(); // reload the op; it shows the flash
      } else {
        plain();
        const p = $('action-result');
        p.className = 'error';
        p.textContent = what + ' refused (' + r.status + '): ' + errorText(r.body, '');
      }
    };
    plain();
    return box;
  }

  function init() {
    $('login').addEventListener('submit', login);
    $('logout').addEventListener('click', () => logout(''));
    window.addEventListener('hashchange', route);
    route();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();

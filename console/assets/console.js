// crawld console: a single-page app on the admin API (docs/API.md).
//
// Rules this file keeps (docs/SECURITY.md, "Admin API and console"):
//  - Only documented endpoints, same origin, with fetch(); nothing is
//    loaded from anywhere else (the Content-Security-Policy says so too).
//  - Data from the crawl (URLs, host names, robots.txt, page bodies) is
//    hostile: it goes into the page as text nodes or attributes set by the
//    DOM API, never parsed as markup.
//  - Mutating calls are POSTs with Content-Type: application/json, which
//    the server requires of every client; the token, when the operator
//    gives one, lives in sessionStorage (this tab only) and goes out as
//    "Authorization: Bearer".
'use strict';

(() => {
  const POLL_MS = 2000;           // status sampling period
  const HISTORY_MS = 3600 * 1000; // the chart's window: the last hour
  const TOKEN_KEY = 'crawld-admin-token';

  // The one piece of state the views share: samples of /api/status taken
  // every POLL_MS while the page is open (the chart of the overview). The
  // server keeps no history: see docs/OPERATIONS.md, "Console".
  const app = {
    samples: [],        // {t, pages, bytes}
    status: null,       // the latest /api/status
    feed: { cursor: '', latest: [] },
    timer: null,
    view: null,
  };

  // ---------------------------------------------------------------- DOM

  // h('td', {class: 'num'}, 'text', node, ...): an element; strings become
  // text nodes, so crawl data can never turn into markup.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    append(el, children);
    return el;
  }
  function append(el, children) {
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  function svg(tag, attrs, ...children) {
    const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    for (const c of children) {
      el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const $ = (id) => document.getElementById(id);

  function fmtInt(n) {
    return typeof n === 'number' ? Math.round(n).toLocaleString('en-US') : '–';
  }
  function fmtRate(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '–';
    return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
  }
  function fmtBytes(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '–';
    const units = ['B', 'KB', 'MB', 'GB', 'TB'];
    let i = 0;
    while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
    return (i === 0 ? n.toFixed(0) : n.toFixed(1)) + ' ' + units[i];
  }
  function fmtDuration(s) {
    if (typeof s !== 'number') return '–';
    if (s < 60) return s.toFixed(0) + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + Math.floor(s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  }

  function notice(text, kind) {
    const n = $('notice');
    if (!text) { n.hidden = true; n.textContent = ''; return; }
    n.className = 'notice' + (kind ? ' ' + kind : '');
    n.textContent = text;
    n.hidden = false;
  }

  // ---------------------------------------------------------------- API

  class ApiError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  async function api(method, path, body) {
    const headers = { 'Accept': 'application/json' };
    const t = token();
    if (t) headers['Authorization'] = 'Bearer ' + t;
    const init = { method, headers, cache: 'no-store', credentials: 'omit' };
    if (method !== 'GET') {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body === undefined ? {} : body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, 'crawld cannot be reached (' + e.message + ')');
    }
    let data = null;
    try { data = await resp.json(); } catch (e) { data = null; }
    if (!resp.ok) {
      const msg = data && typeof data.error === 'string' ? data.error
                                                          : 'HTTP ' + resp.status;
      if (resp.status === 401) askToken(msg);
      throw new ApiError(resp.status, msg);
    }
    return data;
  }

  function askToken(why) {
    const d = $('token-dialog');
    notice('The admin API refused the call: ' + why +
           '. Give the admin token (button "Token").');
    if (!d.open) {
      $('token-input').value = '';
      d.showModal();
    }
  }

  function setupToken() {
    $('token-button').addEventListener('click', () => {
      $('token-input').value = token();
      $('token-dialog').showModal();
    });
    $('token-dialog').addEventListener('close', () => {
      const v = $('token-dialog').returnValue;
      if (v === 'save') {
        sessionStorage.setItem(TOKEN_KEY, $('token-input').value.trim());
        notice('');
        route();
      } else if (v === 'clear') {
        sessionStorage.removeItem(TOKEN_KEY);
      }
    });
  }

  // ------------------------------------------------------------- polling

  async function poll() {
    try {
      const st = await api('GET', '/api/status');
      app.status = st;
      const now = Date.now();
      app.samples.push({ t: now, pages: st.pages, bytes: st.bytes });
      while (app.samples.length && app.samples[0].t < now - HISTORY_MS) {
        app.samples.shift();
      }
      const badge = $('state-badge');
      badge.textContent = st.state;
      badge.className = 'badge ' + st.state;
      if (app.view === 'overview') renderOverview();
    } catch (e) {
      const badge = $('state-badge');
      badge.textContent = e.status === 401 ? 'token needed' : 'unreachable';
      badge.className = 'badge';
    }
  }

  // Rates between consecutive samples: what the chart draws.
  function rates() {
    const out = [];
    for (let i = 1; i < app.samples.length; i++) {
      const a = app.samples[i - 1], b = app.samples[i];
      const dt = (b.t - a.t) / 1000;
      if (dt <= 0) continue;
      out.push({ t: b.t, pages: Math.max(0, (b.pages - a.pages) / dt),
                 bytes: Math.max(0, (b.bytes - a.bytes) / dt) });
    }
    return out;
  }

  // ---------------------------------------------------------- the chart

  // The time axis spans what this tab has sampled, from two minutes up
  // to the last hour, so a page opened a minute ago still shows a line.
  function chartWindow() {
    const since = app.samples.length ? Date.now() - app.samples[0].t : 0;
    return Math.min(HISTORY_MS, Math.max(120 * 1000, since));
  }

  function chart(points, key, label, fmt, extraClass) {
    const W = 600, H = 180, L = 56, R = 8, T = 10, B = 22;
    const now = Date.now();
    const span = chartWindow();
    const t0 = now - span;
    const max = Math.max(1e-9, ...points.map((p) => p[key]));
    const x = (t) => L + (W - L - R) * (t - t0) / span;
    const y = (v) => T + (H - T - B) * (1 - v / max);
    const root = svg('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`,
                              preserveAspectRatio: 'none', role: 'img',
                              'aria-label': label });
    for (let i = 0; i <= 4; i++) {
      const v = max * i / 4;
      root.appendChild(svg('line', { class: 'grid-line', x1: L, x2: W - R,
                                     y1: y(v), y2: y(v) }));
      root.appendChild(svg('text', { class: 'axis-label', x: L - 6, y: y(v) + 4,
                                     'text-anchor': 'end' }, fmt(v)));
    }
    for (let i = 4; i >= 0; i--) {
      const ago = span * i / 4;
      const text = i === 0 ? 'now' : ago >= 60000 ? '-' + +(ago / 60000).toFixed(1) + ' min'
                                                   : '-' + Math.round(ago / 1000) + ' s';
      root.appendChild(svg('text', { class: 'axis-label', x: x(now - ago), y: H - 6,
                                     'text-anchor': i === 0 ? 'end' : i === 4 ? 'start' : 'middle' },
                           text));
    }
    if (points.length >= 1) {
      const line = points.map((p) => `${x(p.t).toFixed(1)},${y(p[key]).toFixed(1)}`);
      const area = [`${x(points[0].t).toFixed(1)},${y(0)}`, ...line,
                    `${x(points[points.length - 1].t).toFixed(1)},${y(0)}`];
      root.appendChild(svg('polygon', { class: 'area ' + (extraClass || ''),
                                        points: area.join(' ') }));
      root.appendChild(svg('polyline', { class: 'series ' + (extraClass || ''),
                                         points: line.join(' ') }));
    }
    return root;
  }

  // ------------------------------------------------------------- views

  function stat(label, value, id) {
    return h('div', { class: 'card stat' },
             h('div', { class: 'label' }, label),
             h('div', { class: 'value', id }, value));
  }

  function renderOverview() {
    const st = app.status;
    const view = $('view');
    if (!st) {
      view.replaceChildren(h('p', { class: 'muted' }, 'Waiting for /api/status…'));
      return;
    }
    const r = rates();
    const last = r.length ? r[r.length - 1] : null;
    const hosts = st.hosts || {};
    // Failure classes (the API's "errors", as the progress line counts
    // them) apart from the other counted events.
    const errorMap = st.errors || {};
    const errors = Object.entries(errorMap).sort((a, b) => b[1] - a[1]);
    const events = Object.entries(st.counts || {})
      .filter(([k]) => !(k in errorMap)).sort((a, b) => b[1] - a[1]);
    const countTable = (id, rows, cls) => {
      if (rows.length === 0) return h('p', { class: 'muted', id }, 'none');
      const max = rows[0][1] || 1;
      return h('table', { id }, h('tbody', {}, rows.map(([k, v]) => {
        const bar = h('div', { class: 'bar ' + cls });
        bar.style.width = Math.max(2, 100 * v / max) + '%';
        return h('tr', {}, h('td', { class: 'mono' }, k),
                 h('td', { class: 'num' }, fmtInt(v)), h('td', { class: 'barcell' }, bar));
      })));
    };
    const disk = st.disk || {};
    const workers = st.workers || [];
    view.replaceChildren(
      h('h1', {}, 'Overview'),
      h('div', { class: 'grid' },
        stat('state', st.state, 'ov-state'),
        stat('pages', fmtInt(st.pages), 'ov-pages'),
        stat('pages/s now', last ? fmtRate(last.pages) : '–', 'ov-pps'),
        stat('bytes/s now', last ? fmtBytes(last.bytes) + '/s' : '–', 'ov-bps'),
        stat('queued URLs', fmtInt(st.queued), 'ov-queued'),
        stat('in flight', fmtInt(st.in_flight), 'ov-inflight'),
        stat('data', fmtBytes(st.bytes), 'ov-bytes'),
        stat('uptime', fmtDuration(st.uptime_s), 'ov-uptime')),
      h('div', { class: 'grid2' },
        h('div', { class: 'card' }, h('h2', {}, 'Pages per second'),
          chart(r, 'pages', 'pages per second', fmtRate)),
        h('div', { class: 'card' }, h('h2', {}, 'Bytes per second'),
          chart(r, 'bytes', 'bytes per second', fmtBytes, 'bytes'))),
      h('p', { class: 'muted' },
        `Sampled from /api/status every ${POLL_MS / 1000} s while this page is open; ` +
        `the charts keep the last hour (${app.samples.length} samples).`),
      h('div', { class: 'grid2' },
        h('div', { class: 'card' }, h('h2', {}, 'Hosts by state'),
          h('table', { id: 'ov-hosts' },
            h('tbody', {},
              ['known', 'active', 'ready', 'waiting', 'backing_off', 'idle', 'retired']
                .filter((k) => k in hosts)
                .map((k) => h('tr', {},
                  h('td', {}, h('a', { href: '#/hosts?state=' + k }, k.replace('_', ' '))),
                  h('td', { class: 'num' }, fmtInt(hosts[k]))))))),
        h('div', { class: 'card' },
          h('h2', {}, 'Errors by class (', fmtInt(errors.reduce((a, e) => a + e[1], 0)), ')'),
          countTable('ov-errors', errors, 'bad'),
          h('h2', { class: 'spaced' }, 'Other events'),
          countTable('ov-counts', events, ''))),
      h('div', { class: 'grid2' },
        h('div', { class: 'card' }, h('h2', {}, 'Workers'),
          h('table', { id: 'ov-workers' },
            h('thead', {}, h('tr', {}, h('th', {}, 'worker'), h('th', {}, 'health'),
              h('th', { class: 'num' }, 'pid'), h('th', { class: 'num' }, 'restarts'),
              h('th', { class: 'num' }, 'pages'), h('th', { class: 'num' }, 'queued'))),
            h('tbody', {}, workers.map((w) => {
              const healthy = !w.error && w.up !== false;
              return h('tr', {},
                h('td', {}, String(w.id)),
                h('td', { class: healthy ? 'ok' : 'bad' },
                  healthy ? (w.status ? w.status.state : 'up') : (w.error || 'down')),
                h('td', { class: 'num' }, w.pid === undefined ? '–' : String(w.pid)),
                h('td', { class: 'num' }, w.restarts === undefined ? '–' : fmtInt(w.restarts)),
                h('td', { class: 'num' }, fmtInt(w.pages)),
                h('td', { class: 'num' }, fmtInt(w.queued)));
            })))),
        st.cluster ? h('div', { class: 'card' }, h('h2', {}, 'Nodes'),
          h('div', { class: 'kv', id: 'ov-nodes' },
            h('span', { class: 'k' }, 'this node'),
            h('span', {}, `${st.cluster.node_id} of ${st.cluster.nodes}`),
            h('span', { class: 'k' }, 'live nodes'),
            h('span', { class: st.cluster.live_nodes.length >= st.cluster.nodes ? 'ok' : 'warn' },
              st.cluster.live_nodes.length ? st.cluster.live_nodes.join(', ') : 'none yet'),
            h('span', { class: 'k' }, 'gone nodes'),
            h('span', { class: st.cluster.gone_nodes.length ? 'bad' : '' },
              st.cluster.gone_nodes.length ? st.cluster.gone_nodes.join(', ') : 'none'),
            h('span', { class: 'k' }, 'ring epoch'), h('span', {}, String(st.cluster.epoch)),
            h('span', { class: 'k' }, 'lease'),
            h('span', { class: st.cluster.lease ? 'ok' : 'bad' }, st.cluster.lease ? 'held' : 'none')),
          h('p', { class: 'muted' }, 'Each node serves its own console; these are this node\'s workers.'))
          : null,
        h('div', { class: 'card' }, h('h2', {}, 'Disk'),
          h('div', { class: 'kv', id: 'ov-disk' },
            h('span', { class: 'k' }, 'WARC files'), h('span', {}, fmtBytes(disk.warc_bytes)),
            h('span', { class: 'k' }, 'state (checkpoints, queues, index)'),
            h('span', {}, fmtBytes(disk.state_bytes)),
            h('span', { class: 'k' }, 'robots.txt fetches'),
            h('span', {}, fmtInt(st.robots_fetches))))));
  }

  // Hosts: the table's query lives in the hash (#/hosts?q=..&sort=..), so
  // a sorted, filtered table can be bookmarked and the back button works.
  async function renderHosts(params) {
    const q = params.get('q') || '';
    const state = params.get('state') || '';
    const sort = params.get('sort') || 'queued';
    const order = params.get('order') || (sort === 'host' ? 'asc' : 'desc');
    const view = $('view');
    const input = h('input', { type: 'search', id: 'hosts-q', placeholder: 'filter by host name',
                               value: q });
    const select = h('select', { id: 'hosts-state' },
      ['', 'active', 'ready', 'waiting', 'backing_off', 'idle', 'retired'].map((s) =>
        h('option', { value: s, selected: s === state }, s ? s.replace('_', ' ') : 'any state')));
    const go = (over) => {
      const p = new URLSearchParams({ q: input.value, state: select.value, sort, order, ...over });
      for (const [k, v] of [...p.entries()]) if (!v) p.delete(k);
      location.hash = '#/hosts?' + p.toString();
    };
    input.addEventListener('change', () => go({}));
    select.addEventListener('change', () => go({}));
    const cols = [['host', 'host', 'host'], ['state', 'state', null],
                  ['queued', 'queued', 'queued'], ['fetched', 'fetched', 'fetched'],
                  ['errors', 'errors', 'errors'], ['next fetch', 'next_fetch_in_ms', 'next_fetch'],
                  ['credit', 'credit', 'credit'], ['delay', 'crawl_delay_ms', 'delay'],
                  ['robots', 'robots', null]];
    const head = h('tr', {}, cols.map(([label, , key]) => {
      const cls = [key ? 'sortable' : '', key === sort ? 'sorted-' + order : '',
                   key && key !== 'host' ? 'num' : ''].join(' ').trim();
      return h('th', { class: cls, 'data-sort': key || undefined,
                       onclick: key ? () => go({ sort: key,
                         order: key === sort && order === 'desc' ? 'asc'
                              : key === sort ? 'desc' : (key === 'host' ? 'asc' : 'desc') })
                                    : undefined }, label);
    }));
    const body = h('tbody', {});
    const info = h('p', { class: 'muted', id: 'hosts-info' }, 'Loading…');
    view.replaceChildren(h('h1', {}, 'Hosts'),
      h('div', { class: 'row' }, input, select,
        h('button', { type: 'button', onclick: () => go({}) }, 'Search')),
      h('div', { class: 'card' }, h('table', { id: 'hosts-table' }, h('thead', {}, head), body)),
      info);
    const p = new URLSearchParams({ sort, order, limit: '200' });
    if (q) p.set('q', q);
    if (state) p.set('state', state);
    try {
      const data = await api('GET', '/api/hosts?' + p.toString());
      for (const row of data.hosts) {
        body.appendChild(h('tr', {},
          h('td', {}, h('a', { href: '#/host/' + encodeURIComponent(row.host) }, row.host)),
          h('td', {}, row.state.replace('_', ' ')),
          h('td', { class: 'num' }, fmtInt(row.queued)),
          h('td', { class: 'num' }, fmtInt(row.fetched)),
          h('td', { class: 'num' + (row.errors ? ' bad' : '') }, fmtInt(row.errors)),
          h('td', { class: 'num' }, row.next_fetch_in_ms ? fmtInt(row.next_fetch_in_ms) + ' ms' : 'now'),
          h('td', { class: 'num' }, row.credit.toFixed(2)),
          h('td', { class: 'num' }, fmtInt(row.crawl_delay_ms) + ' ms'),
          h('td', {}, row.robots)));
      }
      info.textContent = `${data.hosts.length} shown of ${data.matched} matching hosts` +
        (data.errors ? ' (missing: ' + data.errors + ')' : '') + '.';
    } catch (e) {
      info.textContent = 'Could not list hosts: ' + e.message;
      info.className = 'bad';
    }
  }

  async function renderHost(name) {
    const view = $('view');
    view.replaceChildren(h('h1', {}, 'Host ', h('span', { class: 'mono' }, name)),
                         h('p', { class: 'muted' }, 'Loading…'));
    let j;
    try {
      j = await api('GET', '/api/hosts/' + encodeURIComponent(name));
    } catch (e) {
      view.replaceChildren(h('h1', {}, 'Host ', h('span', { class: 'mono' }, name)),
                           h('p', { class: 'bad' }, e.message));
      return;
    }
    const kv = (k, v) => [h('span', { class: 'k' }, k), h('span', {}, v)];
    const robots = j.robots || {};
    const recent = j.recent || [];
    view.replaceChildren(
      h('h1', {}, 'Host ', h('span', { class: 'mono', id: 'host-name' }, j.host)),
      h('div', { class: 'grid2' },
        h('div', { class: 'card' }, h('h2', {}, 'Schedule'),
          h('div', { class: 'kv', id: 'host-schedule' },
            kv('state', j.state || '–'), kv('queued', fmtInt(j.queued)),
            kv('fetched', fmtInt(j.fetched)), kv('pages / budget',
              fmtInt(j.pages) + ' / ' + (j.page_budget ? fmtInt(j.page_budget) : 'unlimited')),
            kv('in flight', j.in_flight ? 'yes' : 'no'),
            kv('next fetch in', fmtInt(j.next_fetch_in_ms) + ' ms'),
            kv('credit', typeof j.credit === 'number' ? j.credit.toFixed(2) : '–'),
            kv('crawl delay', fmtInt(j.crawl_delay_ms) + ' ms'),
            kv('consecutive errors', fmtInt(j.consecutive_errors)),
            kv('retired', j.retired ? 'yes' : 'no'))),
        h('div', { class: 'card' }, h('h2', {}, 'Overrides that apply'),
          j.override ? h('pre', { class: 'text', id: 'host-override' }, j.override)
                     : h('p', { class: 'muted', id: 'host-override' }, 'none'))),
      h('div', { class: 'card' },
        h('h2', {}, 'Effective robots rules (', robots.state || 'unknown', ')'),
        robots.rules ? h('pre', { class: 'text', id: 'host-robots' }, robots.rules)
                     : h('p', { class: 'muted', id: 'host-robots' }, 'robots.txt not fetched yet')),
      h('div', { class: 'card' }, h('h2', {}, 'Recent fetches'),
        recent.length === 0 ? h('p', { class: 'muted' },
          'None in this worker\'s ring of recent fetches.') :
        h('table', { id: 'host-recent' },
          h('thead', {}, h('tr', {}, h('th', {}, 'time'), h('th', {}, 'URL'),
            h('th', { class: 'num' }, 'status'), h('th', { class: 'num' }, 'time taken'),
            h('th', { class: 'num' }, 'bytes'))),
          h('tbody', {}, recent.map((f) => h('tr', {},
            h('td', { class: 'mono' }, f.time.replace('T', ' ').slice(0, 23)),
            h('td', { class: 'mono' }, f.url, f.robots ? ' (robots.txt)' : ''),
            h('td', { class: 'num ' + (f.status >= 400 || f.status === 0 ? 'bad' : '') },
              f.status ? String(f.status) : f.error),
            h('td', { class: 'num' }, fmtInt(f.duration_ms) + ' ms'),
            h('td', { class: 'num' }, fmtBytes(f.bytes))))))));
  }

  async function renderRules() {
    const view = $('view');
    const url = h('input', { type: 'text', id: 'rule-url',
                             placeholder: 'http://example.com/path' });
    const result = h('div', { class: 'result', id: 'rule-result' });
    const reloadResult = h('span', { id: 'reload-result', class: 'muted' });
    const test = async () => {
      result.replaceChildren(h('span', { class: 'muted' }, 'Testing…'));
      try {
        const j = await api('POST', '/api/rules/test', { url: url.value });
        if (j.error) {
          result.replaceChildren(h('p', { class: 'bad' }, j.error));
          return;
        }
        const f = j.filter;
        const where = f.line > 0 ? `${f.file}:${f.line}` : f.rule;
        const rb = j.robots || {};
        result.replaceChildren(h('div', { class: 'kv' },
          h('span', { class: 'k' }, 'URL'), h('span', { class: 'mono' }, j.url),
          h('span', { class: 'k' }, 'filter'),
          h('span', { id: 'rule-verdict', class: f.accept ? 'ok' : 'bad' },
            (f.accept ? 'accepted' : 'rejected') + ' by ',
            h('span', { class: 'mono', id: 'rule-where' }, where),
            f.line > 0 ? ' (' + f.rule + ')' : ''),
          h('span', { class: 'k' }, 'trap'), h('span', {}, j.traps || 'none'),
          h('span', { class: 'k' }, 'robots'),
          h('span', {}, rb.allowed === null || rb.allowed === undefined
            ? 'not known yet (' + rb.state + ')'
            : (rb.allowed ? 'allowed' : 'disallowed') + (rb.rule ? ' by ' + rb.rule : '')),
          h('span', { class: 'k' }, 'override'), h('span', {}, j.override || 'none')));
      } catch (e) {
        result.replaceChildren(h('p', { class: 'bad' }, e.message));
      }
    };
    const form = h('form', { class: 'row', id: 'rule-form',
                             onsubmit: (ev) => { ev.preventDefault(); test(); } },
                   url, h('button', { type: 'submit', id: 'rule-test' }, 'Test URL'));
    const tables = h('div', {}, h('p', { class: 'muted' }, 'Loading rules…'));
    view.replaceChildren(h('h1', {}, 'Rules'),
      h('div', { class: 'card' }, h('h2', {}, 'Test a URL'), form, result),
      h('div', { class: 'row' },
        h('button', { type: 'button', id: 'rules-reload', onclick: async () => {
          reloadResult.textContent = 'Reloading…';
          try {
            const j = await api('POST', '/api/rules/reload');
            reloadResult.textContent = `Reloaded: ${j.filter_rules} filter rules, ${j.overrides} overrides.`;
            reloadResult.className = 'ok';
            loadTables();
          } catch (e) {
            reloadResult.textContent = 'Reload refused: ' + e.message;
            reloadResult.className = 'bad';
          }
        } }, 'Reload rules and overrides'), reloadResult),
      tables);
    const loadTables = async () => {
      try {
        const j = await api('GET', '/api/rules');
        tables.replaceChildren(
          h('div', { class: 'card' },
            h('h2', {}, 'Filter rules ', h('span', { class: 'mono muted' }, j.rules_file || '(none)')),
            h('table', { id: 'rules-filter' },
              h('thead', {}, h('tr', {}, h('th', {}, 'where'), h('th', {}, 'rule'),
                                h('th', { class: 'num' }, 'hits'))),
              h('tbody', {}, j.filter.map((r) => h('tr', {},
                h('td', { class: 'mono' }, r.where), h('td', { class: 'mono' }, r.rule),
                h('td', { class: 'num' }, fmtInt(r.hits))))))),
          h('div', { class: 'card' },
            h('h2', {}, 'Robots overrides ', h('span', { class: 'mono muted' }, j.overrides_file || '(none)')),
            j.overrides.length === 0 ? h('p', { class: 'muted' }, 'none') :
            h('table', { id: 'rules-overrides' },
              h('thead', {}, h('tr', {}, h('th', {}, 'where'), h('th', {}, 'directive'),
                                h('th', { class: 'num' }, 'hosts'))),
              h('tbody', {}, j.overrides.map((r) => h('tr', {},
                h('td', { class: 'mono' }, r.where), h('td', { class: 'mono' }, r.text),
                h('td', { class: 'num' }, fmtInt(r.hits))))))));
      } catch (e) {
        tables.replaceChildren(h('p', { class: 'bad' }, 'Could not read the rules: ' + e.message));
      }
    };
    loadTables();
  }

  function renderControl() {
    const view = $('view');
    const out = h('div', { class: 'result', id: 'control-result' });
    const show = (j, ok) => out.replaceChildren(
      h('pre', { class: 'text ' + (ok ? '' : 'bad') }, typeof j === 'string' ? j : JSON.stringify(j, null, 2)));
    const act = (path, confirmText) => async () => {
      if (confirmText && !window.confirm(confirmText)) return;
      try { show(await api('POST', path), true); poll(); }
      catch (e) { show(`${path} refused (${e.status}): ${e.message}`, false); }
    };
    const seeds = h('textarea', { id: 'seeds-input', placeholder: 'one URL per line' });
    view.replaceChildren(h('h1', {}, 'Seeds & control'),
      h('div', { class: 'card' }, h('h2', {}, 'Crawl'),
        h('div', { class: 'row' },
          h('button', { type: 'button', id: 'btn-pause', onclick: act('/api/pause') }, 'Pause'),
          h('button', { type: 'button', id: 'btn-resume', onclick: act('/api/resume') }, 'Resume'),
          h('button', { type: 'button', id: 'btn-stop', class: 'danger',
                        onclick: act('/api/stop', 'Stop the crawl? In-flight fetches finish, WARCs are closed, and crawld exits.') },
            'Stop')),
        h('p', { class: 'muted' }, 'Pause starts no new fetch (those in flight finish); ' +
          'stop ends the crawl gracefully.')),
      h('div', { class: 'card' }, h('h2', {}, 'Add seeds'), seeds,
        h('div', { class: 'row' }, h('button', { type: 'button', id: 'btn-seeds', onclick: async () => {
          const urls = seeds.value.split('\n').map((s) => s.trim()).filter((s) => s && !s.startsWith('#'));
          try { show(await api('POST', '/api/seeds', { urls }), true); }
          catch (e) { show('seeds refused: ' + e.message, false); }
        } }, 'Add seeds'))),
      out);
  }

  // Documents: the feed is read forward from a cursor (GET /api/docs), so
  // "latest" means the newest this tab has read up to now; each visit reads
  // on from where the last one stopped, at most 20 pages at a time.
  async function renderDocs() {
    const view = $('view');
    const info = h('p', { class: 'muted', id: 'docs-info' }, 'Reading the feed…');
    const body = h('tbody', {});
    view.replaceChildren(h('h1', {}, 'Documents'), info,
      h('div', { class: 'card' }, h('table', { id: 'docs-table' },
        h('thead', {}, h('tr', {}, h('th', {}, 'time'), h('th', {}, 'URL'),
          h('th', { class: 'num' }, 'status'), h('th', {}, 'type'), h('th', {}, 'record'))),
        body)));
    try {
      for (let i = 0; i < 20; i++) {
        const p = new URLSearchParams({ limit: '1000' });
        if (app.feed.cursor) p.set('since', app.feed.cursor);
        const j = await api('GET', '/api/docs?' + p.toString());
        app.feed.latest.push(...j.entries);
        if (app.feed.latest.length > 100) app.feed.latest.splice(0, app.feed.latest.length - 100);
        if (j.next) app.feed.cursor = j.next;
        if (j.entries.length < 1000) break;
      }
    } catch (e) {
      info.textContent = 'Could not read the feed: ' + e.message;
      info.className = 'bad';
      return;
    }
    const rows = app.feed.latest.slice().reverse();
    info.textContent = rows.length ? `The ${rows.length} newest records (feed cursor ${app.feed.cursor}).`
                                   : 'No record in the feed yet.';
    for (const e of rows) {
      const link = '#/record/' + encodeURIComponent(e.warc) + '/' + e.offset + '/' + e.length;
      body.appendChild(h('tr', {},
        h('td', { class: 'mono' }, (e.time || '').replace('T', ' ').slice(0, 19)),
        h('td', { class: 'mono' }, e.url),
        h('td', { class: 'num' }, String(e.status)),
        h('td', {}, e.mime || ''),
        h('td', {}, h('a', { href: link }, 'open'))));
    }
  }

  async function renderRecord(warc, offset, length) {
    const view = $('view');
    view.replaceChildren(h('h1', {}, 'Record'), h('p', { class: 'muted' }, 'Reading the WARC…'));
    const p = new URLSearchParams({ warc, offset, length });
    try {
      const j = await api('GET', '/api/docs/record?' + p.toString());
      view.replaceChildren(h('h1', {}, 'Record ', h('span', { class: 'mono' }, j.target_uri)),
        h('div', { class: 'card' }, h('h2', {}, 'WARC headers'),
          h('div', { class: 'kv' }, j.warc_headers.map(([k, v]) =>
            [h('span', { class: 'k mono' }, k), h('span', { class: 'mono' }, v)]))),
        j.http_head !== undefined ? h('div', { class: 'card' }, h('h2', {}, 'HTTP head'),
          h('pre', { class: 'text' }, j.http_head)) : null,
        h('div', { class: 'card' }, h('h2', {}, `Body (${fmtBytes(j.body_bytes)}` +
          (j.truncated ? ', first 64 KB shown as text)' : ', shown as text)')),
          h('pre', { class: 'text', id: 'record-body' }, j.body)));
    } catch (e) {
      view.replaceChildren(h('h1', {}, 'Record'), h('p', { class: 'bad' }, e.message));
    }
  }

  // ------------------------------------------------------------- routing

  function route() {
    const hash = location.hash || '#/overview';
    const [path, query] = hash.slice(1).split('?');
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    const name = parts[0] || 'overview';
    app.view = name;
    for (const a of document.querySelectorAll('#nav a')) {
      const v = a.getAttribute('data-view');
      a.classList.toggle('current', v === name || (v === 'hosts' && name === 'host') ||
                                    (v === 'docs' && name === 'record'));
    }
    const params = new URLSearchParams(query || '');
    switch (name) {
      case 'hosts': return renderHosts(params);
      case 'host': return renderHost(parts.slice(1).join('/'));
      case 'rules': return renderRules();
      case 'control': return renderControl();
      case 'docs': return renderDocs();
      case 'record': return renderRecord(parts[1], parts[2], parts[3]);
      default: app.view = 'overview'; return renderOverview();
    }
  }

  document.addEventListener('DOMContentLoaded', () => {
    setupToken();
    window.addEventListener('hashchange', route);
    route();
    poll();
    app.timer = setInterval(poll, POLL_MS);
  });
})();

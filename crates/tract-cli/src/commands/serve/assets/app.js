// tract serve: the browser front end. Vanilla ES2020, no build step, no dependency.
//
// Every string that comes from the API is untrusted: it only ever reaches the DOM through
// textContent / createTextNode (the `h` helper below), and links are only ever `#/...`
// routes built here from ids and encodeURIComponent'd branch names.
'use strict';

(() => {
  // ------------------------------------------------------------------ DOM helpers

  /** Creates an element. props: class, text, testid, dataset, href (#/ routes only),
   *  on<event> listeners, DOM properties (non-string values) or attributes (strings). */
  function h(tag, props, ...children) {
    const e = document.createElement(tag);
    if (props) {
      for (const [k, v] of Object.entries(props)) {
        if (v == null || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = String(v);
        else if (k === 'testid') e.dataset.testid = v;
        else if (k === 'dataset') {
          for (const [dk, dv] of Object.entries(v)) if (dv != null) e.dataset[dk] = String(dv);
        } else if (k === 'href') e.setAttribute('href', safeHref(v));
        else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
        else if (k === 'style' || k.startsWith('on')) continue; // never: CSP and safety
        else if (typeof v !== 'string' && k in e) e[k] = v;
        else e.setAttribute(k, v === true ? '' : String(v));
      }
    }
    add(e, children);
    return e;
  }

  function add(parent, children) {
    for (const c of children) {
      if (c == null || c === false) continue;
      if (Array.isArray(c)) add(parent, c);
      else if (c instanceof Node) parent.appendChild(c);
      else parent.appendChild(document.createTextNode(String(c)));
    }
    return parent;
  }

  /** Only in-app routes are ever put in an href. */
  function safeHref(v) {
    const s = String(v);
    return s.startsWith('#/') ? s : '#/';
  }

  const enc = (s) => encodeURIComponent(String(s));
  const sessionHref = (branch, at) =>
    '#/session/' + enc(branch) + (at != null ? '?at=' + enc(at) : '');
  const historyHref = (branch) => '#/history/' + enc(branch);
  const commitHref = (id) => '#/commit/' + enc(id);

  // ------------------------------------------------------------------ formatting

  const shortId = (id) => (id ? String(id).slice(0, 10) : '');

  function fmtInt(n) {
    if (n == null || !Number.isFinite(Number(n))) return '–';
    return Math.round(Number(n)).toLocaleString('en-US');
  }

  function humanBytes(n) {
    if (n == null || !Number.isFinite(Number(n))) return '–';
    n = Number(n);
    if (n < 1024) return n + ' B';
    const units = ['KB', 'MB', 'GB', 'TB'];
    let v = n / 1024;
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return (v < 10 ? v.toFixed(1) : Math.round(v).toString()) + ' ' + units[i];
  }

  function humanDuration(us) {
    if (us == null || !Number.isFinite(Number(us))) return '';
    us = Number(us);
    if (us < 1000) return Math.round(us) + ' µs';
    const ms = us / 1000;
    if (ms < 1000) return Math.round(ms) + ' ms';
    const s = ms / 1000;
    if (s < 59.95) return s.toFixed(1) + ' s';
    const m = Math.floor(s / 60);
    if (m < 60) return m + ' min ' + Math.floor(s - m * 60) + ' s';
    const hrs = Math.floor(m / 60);
    return hrs + ' h ' + (m - hrs * 60) + ' min';
  }

  function toDate(us, iso) {
    if (us != null && Number.isFinite(Number(us)) && Number(us) > 0) return new Date(Number(us) / 1000);
    if (iso) {
      const d = new Date(iso);
      if (!Number.isNaN(d.getTime())) return d;
    }
    return null;
  }

  function fmtDateTime(us, iso) {
    const d = toDate(us, iso);
    return d ? d.toLocaleString() : iso || '';
  }

  /** Clock time for today, else date and time. */
  function fmtShort(us, iso) {
    const d = toDate(us, iso);
    if (!d) return iso || '';
    const now = new Date();
    const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
    if (d.toDateString() === now.toDateString()) return time;
    return d.toLocaleDateString([], { year: 'numeric', month: 'short', day: 'numeric' }) + ' ' + time;
  }

  function fmtRelative(us, iso) {
    const d = toDate(us, iso);
    if (!d) return iso || '–';
    const s = (Date.now() - d.getTime()) / 1000;
    if (s < 0) return fmtShort(us, iso);
    if (s < 45) return 'just now';
    if (s < 90) return '1 min ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    if (s < 86400) return Math.round(s / 3600) + ' h ago';
    if (s < 86400 * 30) return Math.round(s / 86400) + ' d ago';
    return d.toLocaleDateString();
  }

  function timeEl(us, iso, relative) {
    const d = toDate(us, iso);
    return h(
      'time',
      { class: 'time', datetime: d ? d.toISOString() : iso || '', title: fmtDateTime(us, iso) },
      relative ? fmtRelative(us, iso) : fmtShort(us, iso)
    );
  }

  function prettyJsonText(s) {
    if (s == null) return '';
    if (typeof s !== 'string') return JSON.stringify(s, null, 2);
    try {
      return JSON.stringify(JSON.parse(s), null, 2);
    } catch (_) {
      return s;
    }
  }

  const plural = (n, one, many) => fmtInt(n) + ' ' + (Number(n) === 1 ? one : many || one + 's');

  // ------------------------------------------------------------------ API

  class ApiError extends Error {
    constructor(code, message, status) {
      super(message);
      this.code = code;
      this.status = status;
    }
  }

  async function api(path) {
    let res;
    try {
      res = await fetch(path, { headers: { Accept: 'application/json' }, cache: 'no-store' });
    } catch (e) {
      throw new ApiError(
        'network',
        'Cannot reach the tract server (' + ((e && e.message) || e) + '). Is `tract serve` still running?',
        0
      );
    }
    let text = '';
    try {
      text = await res.text();
    } catch (_) {
      text = '';
    }
    let body = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch (_) {
      body = null;
    }
    if (!res.ok || (body && typeof body === 'object' && body.error)) {
      const err = body && body.error;
      if (err && typeof err === 'object') {
        throw new ApiError(String(err.code || 'error'), String(err.message || 'error ' + res.status), res.status);
      }
      throw new ApiError(
        'http_' + res.status,
        'The server answered ' + res.status + ' ' + (res.statusText || '') + (text ? ': ' + text.slice(0, 300) : ''),
        res.status
      );
    }
    if (body == null || typeof body !== 'object') {
      throw new ApiError('bad_response', 'The server sent a response that is not a JSON object (' + path + ').', res.status);
    }
    return body;
  }

  const ERROR_TITLES = {
    not_found: 'Not found',
    bad_request: 'Bad request',
    corrupt: 'The store is corrupt',
    internal: 'Internal server error',
    network: 'Server unreachable',
  };

  function errorBox(err, title) {
    const code = (err && err.code) || 'error';
    const msg = (err && err.message) || String(err);
    return h(
      'div',
      { class: 'error', testid: 'error', role: 'alert' },
      h('strong', { class: 'error-title' }, title || ERROR_TITLES[code] || 'Error'),
      ' ',
      h('span', { class: 'error-msg' }, msg),
      code === 'corrupt' ? h('span', { class: 'error-hint' }, ' `tract fsck` tells more.') : null,
      ' ',
      h('code', { class: 'error-code' }, code)
    );
  }

  // ------------------------------------------------------------------ chrome: header, crumbs

  function setCrumbs(items) {
    const nav = document.getElementById('crumbs');
    if (!nav) return;
    const parts = [];
    items.forEach((it, i) => {
      if (i > 0) parts.push(h('span', { class: 'sep', 'aria-hidden': 'true' }, '›'));
      parts.push(it.href ? h('a', { href: it.href }, it.text) : h('span', { class: 'here' }, it.text));
    });
    nav.replaceChildren(...parts);
    const last = items[items.length - 1];
    document.title = (last ? last.text + ' · ' : '') + 'tract';
  }

  let liveEl = null;
  function setLive(state, text) {
    liveEl = liveEl || document.getElementById('live');
    if (!liveEl) return;
    if (!state) {
      liveEl.hidden = true;
      return;
    }
    liveEl.hidden = false;
    liveEl.className = 'live live-' + state;
    liveEl.textContent = text;
  }

  async function loadStore() {
    const el = document.getElementById('store-name');
    if (!el) return;
    try {
      const s = await api('/api/store');
      const full = String(s.store || '');
      const m = full.match(/([^/\\]+)[/\\]\.tract[/\\][^/\\]+$/);
      el.textContent = m ? m[1] : full;
      el.title = full + (s.version ? ' · tract ' + s.version : '') + (s.head ? ' · HEAD: ' + s.head : '');
      el.dataset.store = full;
    } catch (e) {
      el.textContent = '';
      el.title = '';
    }
  }

  // ------------------------------------------------------------------ router

  let routeGen = 0;
  let leaveFns = [];

  function parseHash() {
    let raw = location.hash.replace(/^#/, '');
    let query = '';
    const q = raw.indexOf('?');
    if (q >= 0) {
      query = raw.slice(q + 1);
      raw = raw.slice(0, q);
    }
    const params = new URLSearchParams(query);
    if (raw === '' || raw === '/') return { name: 'sessions', params };
    const m = raw.match(/^\/(session|history|commit)\/(.+)$/);
    if (!m) return { name: 'unknown', raw, params };
    let arg = m[2];
    try {
      arg = decodeURIComponent(arg);
    } catch (_) {
      /* keep it raw */
    }
    return { name: m[1], arg, params };
  }

  function route() {
    for (const fn of leaveFns) {
      try {
        fn();
      } catch (_) {
        /* ignore */
      }
    }
    leaveFns = [];
    setLive(null);
    const gen = ++routeGen;
    document.body.dataset.ready = '0';
    const app = document.getElementById('app');
    const ctx = {
      alive: () => gen === routeGen,
      onLeave: (fn) => leaveFns.push(fn),
      app,
    };
    app.replaceChildren(h('p', { class: 'loading' }, 'Loading…'));
    const r = parseHash();
    let p;
    try {
      if (r.name === 'sessions') p = pageSessions(ctx, r.params);
      else if (r.name === 'session') p = pageSession(ctx, r.arg, r.params);
      else if (r.name === 'history') p = pageHistory(ctx, r.arg);
      else if (r.name === 'commit') p = pageCommit(ctx, r.arg);
      else {
        setCrumbs([{ text: 'Sessions', href: '#/' }, { text: 'Unknown page' }]);
        p = Promise.reject(
          new ApiError('not_found', 'There is no page at #' + (r.raw || '') + '. Pages are #/, #/session/BRANCH, #/history/BRANCH and #/commit/ID.', 404)
        );
      }
    } catch (e) {
      p = Promise.reject(e);
    }
    Promise.resolve(p).then(
      () => {
        if (ctx.alive()) document.body.dataset.ready = '1';
      },
      (err) => {
        if (!ctx.alive()) return;
        if (typeof console !== 'undefined' && !(err instanceof ApiError)) console.error(err);
        app.replaceChildren(errorBox(err));
        document.body.dataset.ready = '1';
      }
    );
  }

  // ------------------------------------------------------------------ sessions page

  let sessionFilter = '';

  async function pageSessions(ctx, params) {
    setCrumbs([{ text: 'Sessions' }]);
    if (params && params.has('filter')) sessionFilter = params.get('filter') || '';
    const data = await api('/api/sessions');
    if (!ctx.alive()) return;
    const sessions = Array.isArray(data.sessions) ? data.sessions : [];

    const input = h('input', {
      type: 'search',
      class: 'filter',
      testid: 'session-filter',
      placeholder: 'Filter by name',
      'aria-label': 'Filter sessions by name',
      autocomplete: 'off',
      spellcheck: 'false',
    });
    input.value = sessionFilter;
    const count = h('span', { class: 'muted count' });
    const tbody = h('tbody');
    const table = h(
      'table',
      { class: 'sessions', testid: 'sessions' },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          h('th', { class: 'c-name' }, 'Branch'),
          h('th', { class: 'num' }, 'Messages'),
          h('th', { class: 'num' }, 'Tokens in view'),
          h('th', null, 'Last activity'),
          h('th', null, '')
        )
      ),
      tbody
    );

    const row = (s) =>
      h(
        'tr',
        { class: 'session-row' + (s.current ? ' current' : ''), testid: 'session-row', dataset: { branch: s.name } },
        h(
          'td',
          { class: 'c-name' },
          h('a', { testid: 'session-link', href: sessionHref(s.name), class: 'branch-name' }, s.name),
          s.current ? h('span', { class: 'badge badge-head', title: 'HEAD names this branch' }, 'HEAD') : null
        ),
        h('td', { class: 'num' }, h('span', { testid: 'session-messages' }, String(s.messages ?? 0))),
        h('td', { class: 'num' }, h('span', { testid: 'session-tokens' }, String(s.tokens ?? 0))),
        h('td', null, timeEl(s.last_activity_us, s.last_activity, true)),
        h(
          'td',
          { class: 'links' },
          h('a', { href: historyHref(s.name), class: 'small-link', testid: 'history-link' }, 'history'),
          s.head ? h('a', { href: commitHref(s.head), class: 'id-link', title: 'Tip ' + s.head }, shortId(s.head)) : null
        )
      );

    const render = () => {
      const f = input.value.trim().toLowerCase();
      const shown = f ? sessions.filter((s) => String(s.name).toLowerCase().includes(f)) : sessions;
      const rows = shown.map(row);
      if (!rows.length) {
        rows.push(
          h(
            'tr',
            { class: 'empty' },
            h('td', { colspan: '5' }, sessions.length ? 'No branch name contains “' + input.value.trim() + '”.' : 'This store has no branches yet.')
          )
        );
      }
      tbody.replaceChildren(...rows);
      count.textContent = f
        ? fmtInt(shown.length) + ' of ' + plural(sessions.length, 'session')
        : plural(sessions.length, 'session');
    };
    input.addEventListener('input', () => {
      sessionFilter = input.value;
      render();
    });
    render();

    ctx.app.replaceChildren(
      h(
        'section',
        { class: 'page page-sessions' },
        h('div', { class: 'page-head' }, h('h1', null, 'Sessions'), count),
        h('div', { class: 'toolbar' }, input),
        h('div', { class: 'table-wrap' }, table)
      )
    );
  }

  // ------------------------------------------------------------------ shared pieces of the session view

  const MARK_LABELS = {
    edited: 'edited',
    summarized: 'summarized',
    cleared: 'cleared',
    redacted: 'redacted',
    repaired: 'repaired',
    'not-sent': 'not sent',
  };
  const MARK_TITLES = {
    edited: 'This content has earlier versions',
    summarized: 'A hook summarized this content; the original stays in history',
    cleared: 'Replaced by a placeholder by `tract clear`',
    redacted: 'The content was removed for good',
    repaired: 'A result `tract repair` committed for a call that had none',
    'not-sent': 'This result answers no call in the view: it is not sent to the model',
  };

  function markEl(m) {
    const key = String(m);
    return h(
      'span',
      { class: 'badge mark mark-' + key.replace(/[^a-z-]/g, ''), testid: 'mark', dataset: { mark: key }, title: MARK_TITLES[key] || '' },
      MARK_LABELS[key] || key
    );
  }

  function marksOf(entry, extra) {
    const out = [];
    const marks = Array.isArray(entry.marks) ? entry.marks : [];
    for (const m of marks) out.push(markEl(m));
    if (extra) for (const m of extra) out.push(markEl(m));
    return out;
  }

  /** A <details> that loads its body the first time it is opened. */
  function lazyDetails({ testid, key, cls, summary, load }) {
    const body = h('div', { class: 'lazy-body' }, h('p', { class: 'muted' }, 'Loading…'));
    const d = h('details', { class: 'lazy ' + (cls || ''), testid, dataset: { key } }, h('summary', null, summary), body);
    let state = 'idle';
    d.addEventListener('toggle', () => {
      if (!d.open || state !== 'idle') return;
      state = 'loading';
      d.dataset.loaded = 'loading';
      load().then(
        (nodes) => {
          body.replaceChildren(...nodes);
          state = 'done';
          d.dataset.loaded = 'true';
        },
        (err) => {
          body.replaceChildren(errorBox(err, 'Could not load.'));
          state = 'idle';
          d.dataset.loaded = 'error';
        }
      );
    });
    return d;
  }

  function versionsDetails(position, count) {
    return lazyDetails({
      testid: 'versions',
      key: 'versions:' + position,
      cls: 'versions',
      summary: plural(count, 'version'),
      load: async () => {
        const d = await api('/api/commit/' + enc(position));
        const versions = Array.isArray(d.versions) ? d.versions : [];
        if (!versions.length) return [h('p', { class: 'muted' }, 'No versions recorded.')];
        return [
          h(
            'ol',
            { class: 'version-list' },
            versions.map((v, i) =>
              h(
                'li',
                { class: 'version' + (v.current ? ' current' : ''), testid: 'version', dataset: { current: v.current ? 'true' : 'false', id: v.id } },
                h(
                  'div',
                  { class: 'version-head' },
                  h('span', { class: 'version-label' }, i === 0 ? 'Original' : 'Version ' + (i + 1)),
                  v.current ? h('span', { class: 'badge badge-current' }, 'current') : null,
                  h('span', { class: 'op' }, v.op || ''),
                  v.tokens != null ? h('span', { class: 'muted' }, fmtInt(v.tokens) + ' tok') : null,
                  timeEl(v.timestamp_us, v.created_at),
                  h('a', { class: 'id-link', href: commitHref(v.id), title: v.id }, shortId(v.id))
                ),
                v.note ? h('div', { class: 'note' }, v.note) : null,
                h('pre', { class: 'version-text mono', testid: 'version-text' }, v.text == null ? '' : String(v.text))
              )
            )
          ),
        ];
      },
    });
  }

  function sourcesDetails(position, count) {
    return lazyDetails({
      testid: 'sources',
      key: 'sources:' + position,
      cls: 'sources',
      summary: count != null ? plural(count, 'source message') : 'Source messages',
      load: async () => {
        const d = await api('/api/commit/' + enc(position));
        const sources = Array.isArray(d.sources) ? d.sources : [];
        if (!sources.length) return [h('p', { class: 'muted' }, 'No sources recorded.')];
        return [
          h(
            'ol',
            { class: 'source-list' },
            sources.map((s) =>
              h(
                'li',
                { class: 'source role-' + (s.role || 'unknown'), testid: 'source', dataset: { id: s.id } },
                h(
                  'div',
                  { class: 'source-head' },
                  h('span', { class: 'role' }, s.role || '?'),
                  s.name ? h('span', { class: 'name' }, s.name) : null,
                  s.tokens != null ? h('span', { class: 'muted' }, fmtInt(s.tokens) + ' tok') : null,
                  h('a', { class: 'id-link', href: commitHref(s.id), title: s.id }, shortId(s.id))
                ),
                h('pre', { class: 'source-text mono', testid: 'source-text' }, s.text == null ? '' : String(s.text))
              )
            )
          ),
        ];
      },
    });
  }

  function mergeBlock(m) {
    const strategy =
      m.strategy === 'tool_result' ? 'as a tool result' : m.strategy === 'append' ? 'appended' : m.strategy ? String(m.strategy) : '';
    return h(
      'div',
      { class: 'merge', testid: 'merge', dataset: { branch: m.branch } },
      h('span', { class: 'merge-icon', 'aria-hidden': 'true' }, '⤶'),
      h(
        'span',
        null,
        'Branch ',
        h('a', { testid: 'merge-link', href: sessionHref(m.branch), class: 'branch-name' }, m.branch),
        ' came back here',
        strategy ? ' (' + strategy + ')' : ''
      ),
      m.merged ? h('a', { class: 'id-link', href: commitHref(m.merged), title: 'Merged tip ' + m.merged }, shortId(m.merged)) : null,
      h('a', { class: 'small-link', href: historyHref(m.branch) }, 'history')
    );
  }

  function partsDetails(entry) {
    if (!Array.isArray(entry.parts) || !entry.parts.length) return null;
    const kinds = entry.parts.map((p) => (p && typeof p === 'object' && p.type ? String(p.type) : typeof p));
    const d = h(
      'details',
      { class: 'parts', dataset: { key: 'parts:' + entry.position } },
      h('summary', null, plural(entry.parts.length, 'content part') + ' (' + kinds.join(', ') + ')'),
      h('pre', { class: 'mono' }, JSON.stringify(entry.parts, null, 2))
    );
    return d;
  }

  function roleLabel(role) {
    return { user: 'User', assistant: 'Assistant', system: 'System', tool: 'Tool result' }[role] || String(role || 'message');
  }

  function toolCard(call, parentEntry) {
    const r = call.result || null;
    let state = call.state;
    if (state !== 'pending' && state !== 'ok' && state !== 'error') state = r ? (r.is_error ? 'error' : 'ok') : 'pending';
    const card = h('div', {
      class: 'tool-card state-' + state,
      testid: 'tool-card',
      dataset: { callId: call.id, tool: call.name, state },
    });
    const head = h(
      'div',
      { class: 'tool-head' },
      h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, '⚙'),
      h('span', { class: 'tool-name', testid: 'tool-name' }, call.name == null ? '' : String(call.name)),
      h('span', { class: 'badge state state-' + state, testid: 'tool-state' }, state),
      h(
        'span',
        { class: 'tool-duration', testid: 'tool-duration', title: call.duration_us != null ? fmtInt(call.duration_us) + ' µs' : 'no result yet' },
        call.duration_us != null ? humanDuration(call.duration_us) : state === 'pending' ? 'no result yet' : ''
      ),
      r ? marksOf(r, r.caller == null ? ['not-sent'] : null) : null,
      h('span', { class: 'spacer' }),
      h('span', { class: 'call-id', title: 'Call id' }, call.id == null ? '' : String(call.id))
    );
    card.appendChild(head);
    card.appendChild(h('pre', { class: 'tool-args mono', testid: 'tool-args' }, prettyJsonText(call.arguments)));
    if (state === 'pending' || call.synthetic) {
      card.appendChild(
        h(
          'div',
          { class: 'synthetic-note', testid: 'synthetic-note' },
          h('strong', null, 'No result yet. '),
          'Until the tool returns, the model is sent a synthetic error result in its place (the agent stopped before the tool returned).'
        )
      );
    }
    if (r) {
      if (r.merge) card.appendChild(mergeBlock(r.merge));
      const res = h(
        'details',
        { class: 'tool-result', testid: 'tool-result', dataset: { key: 'result:' + call.id + ':' + parentEntry.position } },
        h(
          'summary',
          null,
          h('span', { class: 'result-label' }, r.is_error ? 'Error result' : 'Result'),
          h('span', { class: 'result-size', title: fmtInt(r.bytes) + ' bytes' }, humanBytes(r.bytes)),
          h('span', { class: 'result-tokens' }, fmtInt(r.tokens) + ' tokens'),
          r.index != null ? h('span', { class: 'muted' }, '#' + r.index) : null
        ),
        h(
          'div',
          { class: 'result-body' },
          r.note ? h('div', { class: 'note' }, r.note) : null,
          h('pre', { class: 'result-text mono', testid: 'result-text' }, r.text == null ? '' : String(r.text)),
          partsDetails(r),
          r.op === 'compress' ? sourcesDetails(r.position, r.summary && Array.isArray(r.summary.sources) ? r.summary.sources.length : null) : null,
          h(
            'div',
            { class: 'result-foot' },
            h('a', { class: 'id-link', href: commitHref(r.commit), title: 'Result commit ' + r.commit }, shortId(r.commit)),
            r.created_at || r.timestamp_us ? timeEl(r.timestamp_us, r.created_at) : null
          )
        )
      );
      card.appendChild(res);
      if (Number(r.versions) > 1) card.appendChild(versionsDetails(r.position, r.versions));
    }
    return card;
  }

  function renderEntry(e, branch) {
    const role = e.role || 'unknown';
    const orphan = role === 'tool' && e.caller == null;
    const node = h('article', {
      class: 'entry role-' + role + ' op-' + (e.op || 'append') + (orphan ? ' orphan' : ''),
      testid: 'entry',
      id: 'entry-' + e.index,
      dataset: { index: e.index, role, op: e.op || 'append', position: e.position },
    });

    node.appendChild(
      h(
        'header',
        { class: 'entry-head' },
        h('span', { class: 'role' }, roleLabel(role)),
        e.name ? h('span', { class: 'name' }, e.name) : null,
        orphan && e.tool_call_id ? h('span', { class: 'muted call-id' }, 'for ' + e.tool_call_id) : null,
        marksOf(e, orphan ? ['not-sent'] : null),
        h('span', { class: 'spacer' }),
        h('span', { class: 'tokens', title: 'tokens' }, h('span', { testid: 'entry-tokens' }, String(e.tokens ?? 0)), ' tok'),
        timeEl(e.timestamp_us, e.created_at),
        h('a', { class: 'id-link', href: commitHref(e.commit), title: 'Commit ' + e.commit }, shortId(e.commit)),
        h('a', { class: 'idx', href: sessionHref(branch, e.index), title: 'Link to this message' }, '#' + e.index)
      )
    );

    const text = e.text == null ? '' : String(e.text);
    const textEl = h(
      role === 'tool' || role === 'system' ? 'pre' : 'div',
      { class: 'entry-text' + (role === 'tool' ? ' mono' : '') + (text ? '' : ' empty'), testid: 'entry-text' },
      text
    );

    if (e.op === 'compress') {
      const n = e.summary && Array.isArray(e.summary.sources) ? e.summary.sources.length : null;
      node.appendChild(
        h(
          'div',
          { class: 'summary-card', testid: 'summary-card' },
          h(
            'div',
            { class: 'summary-head' },
            h('span', { class: 'badge badge-compress' }, 'compressed'),
            ' Summary of ',
            n != null ? plural(n, 'message') : 'a run of messages',
            e.summary && e.summary.summarizer ? h('span', { class: 'muted' }, ' · ' + e.summary.summarizer) : null
          ),
          textEl,
          sourcesDetails(e.position, n)
        )
      );
    } else {
      if (orphan) {
        node.appendChild(
          h('div', { class: 'orphan-note' }, 'This result answers no call in the view, so it is not sent to the model.')
        );
      }
      node.appendChild(textEl);
    }
    const parts = partsDetails(e);
    if (parts) node.appendChild(parts);
    if (e.note) node.appendChild(h('div', { class: 'note' }, e.note));
    if (Number(e.versions) > 1) node.appendChild(versionsDetails(e.position, e.versions));
    if (e.merge) node.appendChild(mergeBlock(e.merge));
    if (Array.isArray(e.tool_calls) && e.tool_calls.length) {
      node.appendChild(h('div', { class: 'tool-calls' }, e.tool_calls.map((c) => toolCard(c, e))));
    }
    return node;
  }

  // ------------------------------------------------------------------ session page

  const WINDOW_KEY = 'tract.contextWindow';
  const DEFAULT_WINDOW = 200000;
  const PAGE = 100;
  const MAX_FETCH = 500;

  function loadWindow() {
    try {
      const v = parseInt(localStorage.getItem(WINDOW_KEY), 10);
      if (Number.isFinite(v) && v > 0) return v;
    } catch (_) {
      /* storage may be disabled */
    }
    return DEFAULT_WINDOW;
  }

  function saveWindow(v) {
    try {
      localStorage.setItem(WINDOW_KEY, String(v));
    } catch (_) {
      /* ignore */
    }
  }

  const isHidden = (e) => e.role === 'tool' && e.caller != null;

  function atBottom() {
    const doc = document.documentElement;
    return window.innerHeight + window.scrollY >= doc.scrollHeight - 80;
  }

  function scrollToBottom() {
    window.scrollTo(0, document.documentElement.scrollHeight);
  }

  async function pageSession(ctx, branch, params) {
    const b = enc(branch);
    setCrumbs([{ text: 'Sessions', href: '#/' }, { text: branch }]);

    const S = {
      branch,
      head: null,
      total: 0,
      tokens: 0,
      lo: 0,
      hi: 0,
      entries: new Map(), // index -> entry
      sigs: new Map(), // index -> JSON text of the entry as last rendered
      nodes: new Map(), // index -> shown element
    };

    const viewUrl = (offset, limit) =>
      '/api/view?branch=' + b + (offset != null ? '&offset=' + offset : '') + '&limit=' + limit;

    // ---- first fetch
    let atParam = params.get('at');
    let at = atParam != null && /^\d+$/.test(atParam) ? parseInt(atParam, 10) : null;
    let first = await api(viewUrl(null, PAGE));
    if (!ctx.alive()) return;
    if (at != null && at < first.offset && at < first.total) {
      const k = Math.ceil((first.total - at) / PAGE);
      const off = Math.max(0, first.total - k * PAGE);
      first = await api(viewUrl(off, PAGE));
      if (!ctx.alive()) return;
    }

    // ---- DOM skeleton
    const entriesEl = h('div', { class: 'entries' });
    const topSlot = h('div', { class: 'load-slot top' });
    const bottomSlot = h('div', { class: 'load-slot bottom' });
    const view = h('div', { class: 'view', testid: 'view', dataset: { branch } }, topSlot, entriesEl, bottomSlot);
    const statusEl = h('div', { class: 'view-status muted' });
    const bannerEl = h('div', { class: 'banner-slot' });

    // context bar
    let ctxWindow = loadWindow();
    const ctxTokens = h('span', { class: 'ctx-tokens', testid: 'context-tokens' }, '0');
    const ctxPct = h('span', { class: 'ctx-pct' });
    const meterFill = h('div', { class: 'meter-fill' });
    const meter = h('div', { class: 'meter', role: 'progressbar', 'aria-label': 'Context used' }, meterFill);
    const winInput = h('input', {
      type: 'number',
      class: 'ctx-window',
      min: '1',
      step: '1000',
      'aria-label': 'Context window (tokens)',
      testid: 'context-window',
      title: 'Context window in tokens (remembered in this browser)',
    });
    winInput.value = String(ctxWindow);
    const contextBar = h(
      'div',
      { class: 'context-bar', testid: 'context-bar' },
      h('div', { class: 'ctx-line' }, h('span', { class: 'ctx-label' }, 'Context'), ctxTokens, h('span', { class: 'muted' }, ' / '), winInput, h('span', { class: 'muted' }, ' tokens'), ctxPct),
      meter
    );
    function updateContext() {
      ctxTokens.textContent = String(S.tokens || 0);
      ctxTokens.title = fmtInt(S.tokens) + ' tokens';
      const pct = ctxWindow > 0 ? ((S.tokens || 0) / ctxWindow) * 100 : 0;
      ctxPct.textContent = (pct < 10 ? pct.toFixed(1) : Math.round(pct)) + '%';
      meterFill.style.width = Math.min(100, Math.max(0, pct)).toFixed(2) + '%'; // CSSOM write: allowed by the CSP
      meter.setAttribute('aria-valuenow', String(Math.round(pct)));
      meter.setAttribute('aria-valuemin', '0');
      meter.setAttribute('aria-valuemax', '100');
      contextBar.classList.toggle('warn', pct >= 80 && pct < 100);
      contextBar.classList.toggle('over', pct >= 100);
    }
    winInput.addEventListener('change', () => {
      const v = parseInt(winInput.value, 10);
      if (Number.isFinite(v) && v > 0) {
        ctxWindow = v;
        saveWindow(v);
      } else {
        winInput.value = String(ctxWindow);
      }
      updateContext();
    });
    winInput.addEventListener('input', () => {
      const v = parseInt(winInput.value, 10);
      if (Number.isFinite(v) && v > 0) {
        ctxWindow = v;
        saveWindow(v);
        updateContext();
      }
    });

    // search
    const searchInput = h('input', {
      type: 'search',
      class: 'search-input',
      testid: 'search-input',
      placeholder: 'Search this session…',
      'aria-label': 'Search',
      autocomplete: 'off',
      spellcheck: 'false',
    });
    const searchHistory = h('input', { type: 'checkbox', testid: 'search-history', id: 'search-history' });
    const searchBtn = h('button', { type: 'button', class: 'btn', testid: 'search-button' }, 'Search');
    const searchResults = h('div', { class: 'search-results', testid: 'search-results', hidden: true });
    let searchSeq = 0;
    async function runSearch() {
      const q = searchInput.value.trim();
      const seq = ++searchSeq;
      if (!q) {
        searchResults.hidden = true;
        searchResults.replaceChildren();
        return;
      }
      searchResults.hidden = false;
      searchResults.replaceChildren(h('p', { class: 'muted' }, 'Searching…'));
      try {
        const res = await api(
          '/api/search?branch=' + b + '&q=' + enc(q) + '&history=' + (searchHistory.checked ? 'true' : 'false')
        );
        if (seq !== searchSeq || !ctx.alive()) return;
        const hits = Array.isArray(res.hits) ? res.hits : [];
        const close = h('button', { type: 'button', class: 'btn-link', 'aria-label': 'Close search results' }, 'close');
        close.addEventListener('click', () => {
          searchResults.hidden = true;
          searchResults.replaceChildren();
        });
        searchResults.replaceChildren(
          h(
            'div',
            { class: 'search-head' },
            h('strong', null, plural(hits.length, 'hit')),
            ' for “',
            q,
            '”',
            searchHistory.checked ? ' in the whole history' : ' in the view',
            h('span', { class: 'spacer' }),
            close
          ),
          hits.length
            ? h(
                'ol',
                { class: 'hits' },
                hits.map((hit) => {
                  const href = hit.index != null ? sessionHref(branch, hit.index) : commitHref(hit.id);
                  const tools = Array.isArray(hit.tools) && hit.tools.length ? hit.tools.join(', ') : '';
                  return h(
                    'li',
                    { class: 'search-hit', testid: 'search-hit', dataset: { id: hit.id, index: hit.index } },
                    h(
                      'a',
                      { href },
                      h(
                        'span',
                        { class: 'hit-meta' },
                        h('span', { class: 'role' }, hit.role || hit.op || ''),
                        tools ? h('span', { class: 'tool-name' }, tools) : null,
                        hit.index != null
                          ? h('span', { class: 'muted' }, '#' + hit.index)
                          : h('span', { class: 'badge badge-old', title: 'Not in the view any more' }, 'history'),
                        h('span', { class: 'id-text' }, shortId(hit.id)),
                        timeEl(hit.timestamp_us, hit.created_at)
                      ),
                      h('span', { class: 'snippet' }, hit.snippet == null ? '' : String(hit.snippet))
                    )
                  );
                })
              )
            : h('p', { class: 'muted' }, 'Nothing found.')
        );
      } catch (err) {
        if (seq !== searchSeq || !ctx.alive()) return;
        searchResults.replaceChildren(errorBox(err, 'Search failed.'));
      }
    }
    searchInput.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        runSearch();
      }
    });
    searchBtn.addEventListener('click', runSearch);
    searchHistory.addEventListener('change', () => {
      if (searchInput.value.trim()) runSearch();
    });

    const page = h(
      'section',
      { class: 'page page-session' },
      h(
        'div',
        { class: 'page-head' },
        h('h1', { class: 'branch-name' }, branch),
        h('a', { href: historyHref(branch), class: 'small-link', testid: 'history-link' }, 'history'),
        statusEl
      ),
      h(
        'div',
        { class: 'session-sticky' },
        h(
          'div',
          { class: 'session-tools' },
          contextBar,
          h(
            'div',
            { class: 'search' },
            searchInput,
            h('label', { class: 'check', for: 'search-history' }, searchHistory, ' whole history'),
            searchBtn
          )
        ),
        searchResults
      ),
      bannerEl,
      view
    );

    // ---- rendering

    function updateStatus() {
      view.dataset.total = String(S.total);
      view.dataset.head = S.head || '';
      statusEl.replaceChildren(
        plural(S.total, 'message') + ' in view',
        S.head ? ' · head ' : '',
        S.head ? h('a', { class: 'id-link', href: commitHref(S.head), title: S.head }, shortId(S.head)) : null
      );
      updateContext();
      updateLoadButtons();
    }

    let earlierBtn = null;
    let laterBtn = null;
    function updateLoadButtons() {
      if (S.lo > 0) {
        if (!earlierBtn) {
          earlierBtn = h('button', { type: 'button', class: 'btn load-earlier', testid: 'load-earlier' });
          earlierBtn.addEventListener('click', () => loadEarlier());
          topSlot.replaceChildren(earlierBtn);
        }
        if (!earlierBtn.disabled) earlierBtn.textContent = 'Load earlier (' + plural(S.lo, 'earlier message') + ')';
      } else if (earlierBtn) {
        earlierBtn.remove();
        earlierBtn = null;
        topSlot.replaceChildren(h('div', { class: 'view-start muted' }, 'Start of the session'));
      } else if (!topSlot.firstChild) {
        topSlot.replaceChildren(h('div', { class: 'view-start muted' }, 'Start of the session'));
      }
      if (S.hi < S.total) {
        if (!laterBtn) {
          laterBtn = h('button', { type: 'button', class: 'btn load-later', testid: 'load-later' });
          laterBtn.addEventListener('click', () => loadLater());
          bottomSlot.replaceChildren(laterBtn);
        }
        if (!laterBtn.disabled) laterBtn.textContent = 'Load later (' + plural(S.total - S.hi, 'newer message') + ')';
      } else if (laterBtn) {
        laterBtn.remove();
        laterBtn = null;
        bottomSlot.replaceChildren();
      }
    }

    /** The open <details> of a node, by their data-key, to keep them open across a re-render. */
    function openKeys(node) {
      const keys = [];
      for (const d of node.querySelectorAll('details[data-key]')) if (d.open) keys.push(d.dataset.key);
      return keys;
    }
    function reopen(node, keys) {
      if (!keys.length) return;
      for (const d of node.querySelectorAll('details[data-key]')) if (keys.includes(d.dataset.key)) d.open = true;
    }

    function insertNode(idx, node) {
      // find the first shown node with a greater index
      let maxIdx = -1;
      const last = entriesEl.lastElementChild;
      if (last) maxIdx = Number(last.dataset.index);
      if (idx > maxIdx) {
        entriesEl.appendChild(node);
        return;
      }
      const firstEl = entriesEl.firstElementChild;
      if (firstEl && idx < Number(firstEl.dataset.index)) {
        entriesEl.insertBefore(node, firstEl);
        return;
      }
      for (const child of entriesEl.children) {
        if (Number(child.dataset.index) > idx) {
          entriesEl.insertBefore(node, child);
          return;
        }
      }
      entriesEl.appendChild(node);
    }

    /** Renders entries (in index order), replacing only those that changed. Returns the count changed. */
    function applyEntries(list) {
      let changed = 0;
      const sorted = list.slice().sort((a, b2) => a.index - b2.index);
      // entries prepended in bulk go through a fragment
      for (const e of sorted) {
        const idx = Number(e.index);
        const sig = JSON.stringify(e);
        if (S.sigs.get(idx) === sig) continue;
        changed++;
        S.entries.set(idx, e);
        S.sigs.set(idx, sig);
        const old = S.nodes.get(idx);
        const node = isHidden(e) ? null : renderEntry(e, branch);
        if (old && node) {
          const keys = openKeys(old);
          old.replaceWith(node);
          reopen(node, keys);
        } else if (old) {
          old.remove();
        } else if (node) {
          insertNode(idx, node);
        }
        if (node) S.nodes.set(idx, node);
        else S.nodes.delete(idx);
      }
      return changed;
    }

    function dropFrom(total) {
      for (const idx of Array.from(S.entries.keys())) {
        if (idx >= total) {
          S.entries.delete(idx);
          S.sigs.delete(idx);
          const n = S.nodes.get(idx);
          if (n) n.remove();
          S.nodes.delete(idx);
        }
      }
    }

    function pickAnchor() {
      const top = 0;
      for (const child of entriesEl.children) {
        const r = child.getBoundingClientRect();
        if (r.bottom > top + 60) return { index: Number(child.dataset.index), top: r.top };
      }
      return null;
    }

    function keepAnchor(anchor) {
      if (!anchor) return;
      const n = S.nodes.get(anchor.index);
      if (!n || !n.isConnected) return;
      const dy = n.getBoundingClientRect().top - anchor.top;
      if (Math.abs(dy) > 1) window.scrollBy(0, dy);
    }

    /** Fetches [from, to) in pages of at most MAX_FETCH; to == null: up to the end of the view. */
    async function fetchRange(from, to) {
      const out = [];
      let meta = null;
      const heads = new Set();
      let off = from;
      for (let guard = 0; guard < 50; guard++) {
        const end = to == null ? null : to;
        const lim = end == null ? MAX_FETCH : Math.min(MAX_FETCH, end - off);
        if (lim <= 0) break;
        const p = await api(viewUrl(off, lim));
        meta = p;
        heads.add(p.head);
        const entries = Array.isArray(p.entries) ? p.entries : [];
        for (const e of entries) out.push(e);
        off += lim;
        const stop = end == null ? p.total : Math.min(end, p.total);
        if (off >= stop || entries.length === 0) break;
      }
      return { entries: out, meta, consistent: heads.size <= 1 };
    }

    /** Results shown inside their call's card need the call's entry: extend lo down to it. */
    async function ensureCallers() {
      let minCaller = S.lo;
      for (const [idx, e] of S.entries) {
        if (idx >= S.lo && isHidden(e) && Number(e.caller) < minCaller) minCaller = Number(e.caller);
      }
      if (minCaller < S.lo && minCaller >= 0) {
        const r = await fetchRange(minCaller, S.lo);
        if (!ctx.alive()) return;
        applyEntries(r.entries);
        S.lo = minCaller;
      }
    }

    function adoptMeta(p) {
      if (!p) return;
      S.head = p.head ?? S.head;
      S.total = Number(p.total ?? S.total);
      S.tokens = Number(p.tokens ?? S.tokens);
    }

    // ---- first render
    adoptMeta(first);
    S.lo = Number(first.offset) || 0;
    const firstEntries = Array.isArray(first.entries) ? first.entries : [];
    S.hi = S.lo + firstEntries.length;
    applyEntries(firstEntries);
    await ensureCallers();
    if (!ctx.alive()) return;
    if (S.total === 0) {
      entriesEl.replaceChildren();
      bottomSlot.replaceChildren(h('p', { class: 'muted empty-view' }, 'This branch has no messages in its view yet.'));
    }
    updateStatus();
    ctx.app.replaceChildren(page);

    // ---- ?at=INDEX
    function targetFor(index) {
      const e = S.entries.get(index);
      if (!e) return null;
      if (isHidden(e)) {
        const callerNode = S.nodes.get(Number(e.caller));
        if (!callerNode) return null;
        for (const card of callerNode.querySelectorAll('[data-testid=tool-card]')) {
          if (card.dataset.callId === String(e.tool_call_id)) {
            const det = card.querySelector('details[data-testid=tool-result]');
            if (det) det.open = true;
            return card;
          }
        }
        return callerNode;
      }
      return S.nodes.get(index) || null;
    }

    if (at != null) {
      if (at >= S.total) {
        bannerEl.replaceChildren(
          h('div', { class: 'notice' }, 'Message #' + at + ' is not in the view (it holds ' + plural(S.total, 'message') + ').')
        );
        scrollToBottom();
      } else {
        const target = targetFor(at);
        if (target) {
          target.classList.add('highlight');
          target.dataset.highlight = 'true';
          if (target.dataset.testid !== 'entry') {
            const ent = target.closest('[data-testid=entry]');
            if (ent) ent.classList.add('highlight-parent');
          }
          target.scrollIntoView({ block: 'center' });
        }
      }
    } else {
      scrollToBottom();
    }

    // ---- loading more
    let busy = Promise.resolve();
    const serial = (fn) => {
      const p = busy.then(fn, fn);
      busy = p.catch(() => {});
      return p;
    };

    function showBanner(err, title) {
      bannerEl.replaceChildren(errorBox(err, title));
    }

    function loadEarlier() {
      return serial(async () => {
        if (!ctx.alive() || S.lo <= 0) return;
        const newLo = Math.max(0, S.lo - PAGE);
        if (earlierBtn) {
          earlierBtn.disabled = true;
          earlierBtn.textContent = 'Loading…';
        }
        try {
          const r = await fetchRange(newLo, S.lo);
          if (!ctx.alive()) return;
          const anchor = pickAnchor();
          applyEntries(r.entries);
          S.lo = newLo;
          await ensureCallers();
          if (!ctx.alive()) return;
          if (r.meta && r.meta.head !== S.head) scheduleRefresh();
          if (earlierBtn) earlierBtn.disabled = false;
          updateStatus();
          keepAnchor(anchor);
          bannerEl.replaceChildren();
        } catch (err) {
          if (!ctx.alive()) return;
          if (earlierBtn) earlierBtn.disabled = false;
          updateLoadButtons();
          showBanner(err, 'Could not load earlier messages.');
        }
      });
    }

    function loadLater() {
      return serial(async () => {
        if (!ctx.alive() || S.hi >= S.total) return;
        if (laterBtn) {
          laterBtn.disabled = true;
          laterBtn.textContent = 'Loading…';
        }
        try {
          const newHi = Math.min(S.total, S.hi + PAGE);
          const r = await fetchRange(S.hi, newHi);
          if (!ctx.alive()) return;
          const anchor = pickAnchor();
          applyEntries(r.entries);
          S.hi = Math.max(S.hi, S.hi + r.entries.length);
          adoptMeta(r.meta);
          if (laterBtn) laterBtn.disabled = false;
          updateStatus();
          keepAnchor(anchor);
          bannerEl.replaceChildren();
        } catch (err) {
          if (!ctx.alive()) return;
          if (laterBtn) laterBtn.disabled = false;
          updateLoadButtons();
          showBanner(err, 'Could not load later messages.');
        }
      });
    }

    // ---- live refresh

    function lowestPending() {
      let low = Infinity;
      for (const [idx, e] of S.entries) {
        if (Array.isArray(e.tool_calls) && e.tool_calls.some((c) => c.state === 'pending' || !c.result)) {
          if (idx < low) low = idx;
        }
      }
      return low;
    }

    async function refresh() {
      if (!ctx.alive()) return;
      const wasBottom = atBottom();
      const anchor = wasBottom ? null : pickAnchor();
      const oldTotal = S.total;
      const atTail = S.hi >= oldTotal;
      // Which loaded entries could have changed: all of them when few are loaded (edits of
      // any message show up then), else from the lowest pending call or the old end.
      let from = S.hi - S.lo <= MAX_FETCH ? S.lo : Math.max(S.lo, Math.min(lowestPending(), oldTotal, S.hi));
      let r = await fetchRange(from, atTail ? null : S.hi);
      if (!ctx.alive()) return;
      let meta = r.meta;
      if (!meta) return;
      const newTotal = Number(meta.total);
      // A structural change (compress, reset): indexes no longer hold the same positions.
      let structural = newTotal < oldTotal;
      for (const e of r.entries) {
        const old = S.entries.get(Number(e.index));
        if (old && old.position !== e.position) structural = true;
      }
      if (structural && from > S.lo) {
        const span = (atTail ? newTotal : S.hi) - S.lo;
        if (span <= 4 * MAX_FETCH) {
          from = S.lo;
          r = await fetchRange(from, atTail ? null : Math.min(S.hi, newTotal));
          if (!ctx.alive()) return;
          meta = r.meta || meta;
        }
      }
      if ((atTail && Number(meta.total) - S.hi > 4 * MAX_FETCH) || (S.lo > 0 && S.lo >= Number(meta.total))) {
        // Far too much arrived at once, or the view shrank below what is loaded: start over
        // on the newest page.
        for (const n of S.nodes.values()) n.remove();
        S.entries.clear();
        S.sigs.clear();
        S.nodes.clear();
        const p = await api(viewUrl(null, PAGE));
        if (!ctx.alive()) return;
        adoptMeta(p);
        S.lo = Number(p.offset) || 0;
        S.hi = S.lo + (p.entries || []).length;
        applyEntries(p.entries || []);
        await ensureCallers();
        if (!ctx.alive()) return;
        updateStatus();
        if (wasBottom) scrollToBottom();
        return;
      }
      adoptMeta(meta);
      dropFrom(S.total);
      applyEntries(r.entries);
      if (atTail) S.hi = S.total;
      else S.hi = Math.min(S.hi, S.total);
      if (S.lo > S.hi) S.lo = S.hi;
      await ensureCallers();
      if (!ctx.alive()) return;
      if (S.total > 0) {
        const empty = bottomSlot.querySelector('.empty-view');
        if (empty) empty.remove();
      }
      updateStatus();
      if (wasBottom) scrollToBottom();
      else keepAnchor(anchor);
      if (!r.consistent) scheduleRefresh();
    }

    let refreshQueued = false;
    function scheduleRefresh() {
      if (refreshQueued) return;
      refreshQueued = true;
      serial(async () => {
        refreshQueued = false;
        try {
          await refresh();
          if (bannerEl.dataset.live === 'error') {
            bannerEl.replaceChildren();
            delete bannerEl.dataset.live;
          }
        } catch (err) {
          if (!ctx.alive()) return;
          showBanner(err, 'Live update failed.');
          bannerEl.dataset.live = 'error';
        }
      });
    }

    if (typeof EventSource === 'function') {
      const es = new EventSource('/api/events?branch=' + b);
      ctx.onLeave(() => es.close());
      setLive('connecting', 'connecting…');
      es.addEventListener('open', () => {
        if (ctx.alive()) setLive('on', 'live');
      });
      es.addEventListener('error', () => {
        if (!ctx.alive()) return;
        setLive(es.readyState === EventSource.CLOSED ? 'off' : 'connecting', es.readyState === EventSource.CLOSED ? 'offline' : 'reconnecting…');
      });
      es.addEventListener('head', (ev) => {
        if (!ctx.alive()) return;
        setLive('on', 'live');
        let d;
        try {
          d = JSON.parse(ev.data);
        } catch (_) {
          return;
        }
        const head = d && d.head != null ? d.head : null;
        if (head !== (S.head || null)) scheduleRefresh();
      });
    }
  }

  // ------------------------------------------------------------------ history page

  async function pageHistory(ctx, branch) {
    setCrumbs([{ text: 'Sessions', href: '#/' }, { text: branch, href: sessionHref(branch) }, { text: 'history' }]);
    let limit = 200;
    const container = h('div', { class: 'history', testid: 'history', dataset: { branch } });
    const moreSlot = h('div', { class: 'load-slot bottom' });
    const info = h('span', { class: 'muted count' });

    async function load() {
      const data = await api('/api/history?branch=' + enc(branch) + '&limit=' + limit);
      if (!ctx.alive()) return;
      renderHistory(container, data, branch);
      container.dataset.head = data.head || '';
      const commits = Array.isArray(data.commits) ? data.commits : [];
      info.textContent = plural(commits.length, 'commit') + (data.more ? ' (more below)' : '');
      moreSlot.replaceChildren();
      if (data.more && limit < 5000) {
        const btn = h('button', { type: 'button', class: 'btn', testid: 'history-more' }, 'Show more');
        btn.addEventListener('click', async () => {
          btn.disabled = true;
          btn.textContent = 'Loading…';
          limit = Math.min(5000, limit * 2 < 1000 ? 1000 : limit * 2);
          try {
            await load();
          } catch (err) {
            if (ctx.alive()) moreSlot.replaceChildren(errorBox(err, 'Could not load more history.'));
          }
        });
        moreSlot.appendChild(btn);
      }
    }
    await load();
    if (!ctx.alive()) return;
    ctx.app.replaceChildren(
      h(
        'section',
        { class: 'page page-history' },
        h(
          'div',
          { class: 'page-head' },
          h('h1', null, h('span', { class: 'branch-name' }, branch), h('span', { class: 'muted' }, ' history')),
          h('a', { class: 'small-link', href: sessionHref(branch) }, 'session view'),
          info
        ),
        h(
          'p',
          { class: 'legend muted' },
          h('span', { class: 'lg-dot' }),
          ' commit of this branch  ',
          h('span', { class: 'lg-dot lg-merge' }),
          ' merge  ',
          h('span', { class: 'lg-dot lg-side' }),
          ' brought in by a merge'
        ),
        container,
        moreSlot
      )
    );
  }

  const LANE_W = 16;

  function renderHistory(container, data, branch) {
    const commits = Array.isArray(data.commits) ? data.commits : [];
    const n = commits.length;
    const idx = new Map();
    commits.forEach((c, i) => idx.set(c.id, i));

    // Lanes: 0 is the first-parent line; each merge's second-parent chain gets a lane,
    // reused once free.
    const laneOf = new Array(n).fill(null);
    commits.forEach((c, i) => {
      if (c.first_parent) laneOf[i] = 0;
    });
    const segments = []; // {start, end, lane, fromLane, toLane, open}
    const laneEnds = []; // lane -> last row it is busy to
    commits.forEach((c, m) => {
      const parents = Array.isArray(c.parents) ? c.parents : [];
      if (parents.length < 2) return;
      const chain = [];
      let cur = parents[1];
      let base = null;
      let guard = 0;
      while (cur != null && guard++ < n + 1) {
        const j = idx.get(cur);
        if (j == null) break; // beyond the listed history
        if (laneOf[j] != null || j <= m) {
          base = j;
          break;
        }
        chain.push(j);
        const p = commits[j].parents;
        cur = Array.isArray(p) && p.length ? p[0] : null;
      }
      const last = chain.length ? Math.max(...chain) : m;
      const end = base != null ? Math.max(base, last) : n; // n: runs off the bottom
      let lane = 1;
      while (laneEnds[lane] != null && laneEnds[lane] >= m) lane++;
      laneEnds[lane] = end;
      for (const j of chain) laneOf[j] = lane;
      segments.push({ start: m, end, lane, fromLane: laneOf[m] ?? 0, toLane: base != null ? laneOf[base] ?? 0 : null, chain: new Set(chain) });
    });
    // Anything left (should not happen): a side lane of its own.
    for (let i = 0; i < n; i++) if (laneOf[i] == null) laneOf[i] = 1;
    const maxLane = Math.max(1, ...laneOf, ...segments.map((s) => s.lane));
    const gutterW = (maxLane + 1) * LANE_W + 8;
    const x = (lane) => lane * LANE_W + LANE_W / 2;

    const forksAt = new Map();
    const forks = Array.isArray(data.forks) ? data.forks : [];
    for (const f of forks) {
      if (!forksAt.has(f.at)) forksAt.set(f.at, []);
      forksAt.get(f.at).push(f);
    }

    const line = (lane, kind) => {
      const el = h('span', { class: 'g-line g-' + kind + (lane > 0 ? ' g-lane-side' : '') });
      el.style.left = x(lane) - 1 + 'px';
      return el;
    };
    const conn = (a, b2) => {
      const el = h('span', { class: 'g-conn' });
      el.style.left = x(Math.min(a, b2)) + 'px';
      el.style.width = Math.abs(x(a) - x(b2)) + 'px';
      return el;
    };

    const gutter = (i, extraFork) => {
      const g = h('div', { class: 'graph', 'aria-hidden': 'true' });
      g.style.width = gutterW + 'px';
      // main line
      if (extraFork) g.appendChild(line(0, 'full'));
      else {
        const top = i > 0;
        const bottom = i < n - 1 || data.more;
        if (top && bottom) g.appendChild(line(0, 'full'));
        else if (top) g.appendChild(line(0, 'top'));
        else if (bottom) g.appendChild(line(0, 'bottom'));
      }
      for (const s of segments) {
        if (extraFork) {
          if (i > s.start && i <= s.end) g.appendChild(line(s.lane, 'full'));
          continue;
        }
        if (i < s.start || i > s.end) continue;
        if (i === s.start) {
          g.appendChild(line(s.lane, s.end > i ? 'bottom' : 'none'));
          g.appendChild(conn(s.fromLane, s.lane));
        } else if (i === s.end && s.end < n) {
          g.appendChild(line(s.lane, 'top'));
          if (s.toLane != null && laneOf[i] !== s.lane) g.appendChild(conn(s.toLane, s.lane));
        } else {
          g.appendChild(line(s.lane, 'full'));
        }
      }
      if (extraFork) {
        const f = h('span', { class: 'g-fork' });
        f.style.left = x(0) + 'px';
        g.appendChild(f);
      } else {
        const c = commits[i];
        const isMerge = Array.isArray(c.parents) && c.parents.length > 1;
        const dot = h('span', { class: 'g-dot' + (isMerge ? ' g-merge' : '') + (c.first_parent ? '' : ' g-side') });
        dot.style.left = x(laneOf[i]) + 'px';
        g.appendChild(dot);
      }
      return g;
    };

    const rows = [];
    commits.forEach((c, i) => {
      for (const f of forksAt.get(c.id) || []) {
        const contained = Array.isArray(c.branches) && c.branches.includes(f.branch);
        rows.push(
          h(
            'div',
            { class: 'hrow fork', testid: 'fork', dataset: { branch: f.branch, at: f.at } },
            gutter(i, true),
            h(
              'div',
              { class: 'fork-text' },
              h('span', { class: 'fork-icon', 'aria-hidden': 'true' }, '↗'),
              'branch ',
              h('a', { href: sessionHref(f.branch), class: 'branch-name', testid: 'fork-link' }, f.branch),
              contained ? ' forks here (its tip: nothing since) ' : ' forks here ',
              h('a', { href: historyHref(f.branch), class: 'small-link' }, 'history')
            )
          )
        );
      }
      const tools = Array.isArray(c.tools) ? c.tools : [];
      const tips = Array.isArray(c.branches) ? c.branches : [];
      rows.push(
        h(
          'div',
          {
            class: 'hrow commit' + (c.first_parent ? ' fp' : ' side'),
            testid: 'history-row',
            dataset: { id: c.id, op: c.op, firstParent: c.first_parent ? 'true' : 'false' },
          },
          gutter(i, false),
          h(
            'div',
            { class: 'hcells' },
            h('a', { class: 'id-link', href: commitHref(c.id), title: c.id }, shortId(c.id)),
            h('span', { class: 'badge op op-' + String(c.op || '').replace(/[^a-z_]/g, '') }, c.op || ''),
            h('span', { class: 'role role-' + String(c.role || '').replace(/[^a-z]/g, '') }, c.role || ''),
            tools.length ? h('span', { class: 'tools' }, tools.join(', ')) : null,
            tips.map((t) => h('a', { class: 'badge tip', href: sessionHref(t), title: 'Tip of ' + t }, t)),
            c.merge
              ? h(
                  'span',
                  { class: 'merge-ref' },
                  'merges ',
                  h('a', { href: historyHref(c.merge.branch), class: 'branch-name' }, c.merge.branch)
                )
              : null,
            c.note ? h('span', { class: 'hnote', title: c.note }, c.note) : null,
            h('span', { class: 'preview', title: c.preview || '' }, c.preview || ''),
            h('span', { class: 'spacer' }),
            c.tokens != null ? h('span', { class: 'muted tok' }, fmtInt(c.tokens) + ' tok') : null,
            timeEl(c.timestamp_us, c.created_at)
          )
        )
      );
    });
    const shown = new Set(commits.map((c) => c.id));
    const others = forks.filter((f) => !shown.has(f.at));
    if (others.length) {
      rows.push(
        h(
          'div',
          { class: 'forks-beyond' },
          h('div', { class: 'muted' }, 'Forks further back than the commits shown:'),
          others.map((f) =>
            h(
              'div',
              { class: 'fork-text', testid: 'fork', dataset: { branch: f.branch, at: f.at } },
              h('span', { class: 'fork-icon', 'aria-hidden': 'true' }, '↗'),
              'branch ',
              h('a', { href: sessionHref(f.branch), class: 'branch-name', testid: 'fork-link' }, f.branch),
              ' forks at ',
              h('a', { href: commitHref(f.at), class: 'id-link' }, shortId(f.at))
            )
          )
        )
      );
    }
    if (!n) rows.push(h('p', { class: 'muted' }, 'No commits.'));
    container.replaceChildren(...rows);
  }

  // ------------------------------------------------------------------ commit page

  async function pageCommit(ctx, id) {
    setCrumbs([{ text: 'Sessions', href: '#/' }, { text: 'commit ' + shortId(id) }]);
    const d = await api('/api/commit/' + enc(id));
    if (!ctx.alive()) return;
    const raw = d.commit && typeof d.commit === 'object' ? d.commit : {};
    const full = raw.commit_hash || raw.id || d.id || id;
    const branches = Array.isArray(d.branches) ? d.branches : [];
    const msg = d.message && typeof d.message === 'object' ? d.message : null;
    const role = (msg && msg.role) || raw.role || null;
    const crumbs = [{ text: 'Sessions', href: '#/' }];
    if (branches.length) crumbs.push({ text: branches[0], href: sessionHref(branches[0]) });
    crumbs.push({ text: 'commit ' + shortId(full) });
    setCrumbs(crumbs);

    const link = (rel, cid, label) =>
      h('a', { class: 'id-link prov-link', testid: 'prov-link', dataset: { rel, id: cid }, href: commitHref(cid), title: cid }, label || shortId(cid));

    const prov = [];
    const group = (title, items) => {
      if (!items || !items.length) return;
      prov.push(h('div', { class: 'prov-group' }, h('dt', null, title), h('dd', null, items)));
    };

    const parents = Array.isArray(d.parents) ? d.parents : Array.isArray(raw.parents) ? raw.parents : [];
    group(
      parents.length > 1 ? 'Parents (merge)' : 'Parent',
      parents.map((p, i) =>
        h('span', { class: 'prov-item' }, link('parent', p), parents.length > 1 ? h('span', { class: 'muted' }, i === 0 ? ' first parent' : ' merged tip') : null)
      )
    );
    const editTarget = d.edit_target != null ? d.edit_target : raw.edit_target;
    if (editTarget) group('Edits', [h('span', { class: 'prov-item' }, link('edit-target', editTarget))]);

    const versions = Array.isArray(d.versions) ? d.versions : [];
    if (versions.length) {
      group(
        'Versions',
        [
          h(
            'ol',
            { class: 'prov-versions' },
            versions.map((v, i) =>
              h(
                'li',
                { class: 'prov-item' + (v.id === full ? ' this' : '') },
                link('version', v.id),
                ' ',
                h('span', { class: 'muted' }, i === 0 ? 'original' : 'edit ' + i),
                v.current ? h('span', { class: 'badge badge-current' }, 'current') : null,
                v.id === full ? h('span', { class: 'badge badge-this' }, 'this commit') : null,
                v.tokens != null ? h('span', { class: 'muted' }, ' ' + fmtInt(v.tokens) + ' tok') : null,
                ' ',
                timeEl(v.timestamp_us, v.created_at),
                v.note ? h('span', { class: 'note inline' }, v.note) : null
              )
            )
          ),
        ]
      );
    }

    const sources = Array.isArray(d.sources) ? d.sources : [];
    if (sources.length) {
      group('Compressed sources', [
        h(
          'ol',
          { class: 'prov-sources' },
          sources.map((s) =>
            h(
              'li',
              { class: 'prov-item' },
              link('source', s.id),
              ' ',
              h('span', { class: 'role' }, s.role || ''),
              s.name ? h('span', { class: 'name' }, ' ' + s.name) : null,
              s.tokens != null ? h('span', { class: 'muted' }, ' ' + fmtInt(s.tokens) + ' tok') : null,
              h('div', { class: 'source-preview' }, s.text == null ? '' : String(s.text).slice(0, 300))
            )
          )
        ),
      ]);
    }
    if (d.compressed_into) group('Compressed into', [h('span', { class: 'prov-item' }, link('compressed-into', d.compressed_into))]);
    const merge = d.merge || raw.merge || null;
    if (merge && typeof merge === 'object') {
      const tip = merge.merged || merge.tip;
      group('Merge', [
        h(
          'span',
          { class: 'prov-item' },
          'branch ',
          merge.branch ? h('a', { class: 'branch-name', href: sessionHref(merge.branch), testid: 'merge-branch-link' }, merge.branch) : '?',
          merge.strategy ? h('span', { class: 'muted' }, ' (' + merge.strategy + ')') : null,
          tip ? [' tip ', link('merged', tip)] : null
        ),
      ]);
    }
    if (branches.length) {
      group(
        'Tip of',
        branches.map((br) =>
          h('span', { class: 'prov-item' }, h('a', { class: 'badge tip', href: sessionHref(br) }, br), ' ', h('a', { class: 'small-link', href: historyHref(br) }, 'history'))
        )
      );
    }

    const redacted = d.redacted && typeof d.redacted === 'object' ? d.redacted : null;
    const text = d.text == null ? '' : String(d.text);
    const toolCalls = msg && Array.isArray(msg.tool_calls) ? msg.tool_calls : [];
    const op = raw.op || '';

    const pageEl = h(
      'section',
      { class: 'page page-commit', testid: 'commit-page', dataset: { id: full } },
      h(
        'div',
        { class: 'page-head' },
        h('h1', null, 'Commit ', h('span', { class: 'mono' }, shortId(full))),
        op ? h('span', { class: 'badge op op-' + String(op).replace(/[^a-z_]/g, '') }, op) : null,
        role ? h('span', { class: 'role' }, roleLabel(role)) : null,
        msg && msg.name ? h('span', { class: 'name' }, msg.name) : null,
        d.tokens != null ? h('span', { class: 'muted' }, fmtInt(d.tokens) + ' tokens') : null,
        timeEl(raw.timestamp_us, raw.created_at)
      ),
      h('div', { class: 'full-id mono muted' }, full),
      raw.note ? h('div', { class: 'note' }, raw.note) : null,
      redacted
        ? h(
            'div',
            { class: 'redacted-notice', testid: 'redacted' },
            h('strong', null, 'Redacted. '),
            'This message’s content was removed for good',
            redacted.reason ? [': ', h('span', { class: 'reason' }, String(redacted.reason))] : '',
            ' (',
            timeEl(redacted.redacted_at_us, redacted.redacted_at),
            ').'
          )
        : null,
      h('h2', null, 'Message'),
      msg && msg.tool_call_id ? h('div', { class: 'muted' }, 'Result for call ' + msg.tool_call_id + (msg.is_error ? ' (error)' : '')) : null,
      h('div', { class: 'commit-message' + (text ? '' : ' empty'), testid: 'commit-message' }, text),
      toolCalls.length
        ? h(
            'div',
            { class: 'tool-calls' },
            toolCalls.map((c) =>
              h(
                'div',
                { class: 'tool-card plain' },
                h('div', { class: 'tool-head' }, h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, '⚙'), h('span', { class: 'tool-name' }, c.name == null ? '' : String(c.name)), h('span', { class: 'spacer' }), h('span', { class: 'call-id' }, c.id == null ? '' : String(c.id))),
                h('pre', { class: 'tool-args mono' }, prettyJsonText(c.arguments))
              )
            )
          )
        : null,
      h('h2', null, 'Provenance'),
      prov.length ? h('dl', { class: 'prov' }, prov) : h('p', { class: 'muted' }, 'A root commit with no other relations.'),
      h('h2', null, 'Raw commit'),
      h('pre', { class: 'raw mono', testid: 'commit-raw' }, JSON.stringify(d.commit, null, 2)),
      msg ? h('details', { class: 'raw-message' }, h('summary', null, 'Message JSON'), h('pre', { class: 'raw mono' }, JSON.stringify(msg, null, 2))) : null
    );
    ctx.app.replaceChildren(pageEl);
    window.scrollTo(0, 0);
  }

  // ------------------------------------------------------------------ start

  window.addEventListener('hashchange', route);
  window.addEventListener('pagehide', () => {
    for (const fn of leaveFns) {
      try {
        fn();
      } catch (_) {
        /* ignore */
      }
    }
    leaveFns = [];
  });
  loadStore();
  route();
})();

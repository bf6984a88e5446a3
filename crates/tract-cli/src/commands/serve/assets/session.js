// A session (page #/session/BRANCH): the branch's view as the model sees it, a page of it at
// a time, kept up to date from the branch's event stream while the page is open.

import * as api from './api.js';
import { contextBar } from './context-bar.js';
import { h } from './dom.js';
import { EntryList } from './entry-list.js';
import { errorBox } from './errors.js';
import { fmtInt, plural, shortId } from './format.js';
import { commitHref, historyHref } from './routes.js';
import { searchBox } from './search.js';
import { setCrumbs, setLive } from './topbar.js';

const PAGE = 100; // entries fetched at a time on opening and by the load buttons

function atBottom() {
  const doc = document.documentElement;
  return window.innerHeight + window.scrollY >= doc.scrollHeight - 80;
}

function scrollToBottom() {
  window.scrollTo(0, document.documentElement.scrollHeight);
}

export async function pageSession(ctx, branch, params) {
  setCrumbs([{ text: 'Sessions', href: '#/' }, { text: branch }]);

  // The view's head and counts, and the indexes [lo, hi) the page holds.
  const S = {
    head: null,
    total: 0,
    tokens: 0,
    lo: 0,
    hi: 0,
  };

  // ---- first fetch: the last page, or the one holding ?at=INDEX
  const atParam = params.get('at');
  const at = atParam != null && /^\d+$/.test(atParam) ? parseInt(atParam, 10) : null;
  let first = await api.view(branch, null, PAGE);
  if (!ctx.alive()) return;
  if (at != null && at < first.offset && at < first.total) {
    const k = Math.ceil((first.total - at) / PAGE);
    const off = Math.max(0, first.total - k * PAGE);
    first = await api.view(branch, off, PAGE);
    if (!ctx.alive()) return;
  }

  // ---- DOM skeleton
  const list = new EntryList(branch);
  const topSlot = h('div', { class: 'load-slot top' });
  const bottomSlot = h('div', { class: 'load-slot bottom' });
  const view = h('div', { class: 'view', testid: 'view', dataset: { branch } }, topSlot, list.el, bottomSlot);
  const statusEl = h('div', { class: 'view-status muted' });
  const usageEl = h('div', { class: 'view-usage muted', testid: 'usage' });
  const bannerEl = h('div', { class: 'banner-slot' });

  const context = contextBar(() => S.tokens);
  const search = searchBox(ctx, branch);

  const page = h(
    'section',
    { class: 'page page-session' },
    h(
      'div',
      { class: 'page-head' },
      h('h1', { class: 'branch-name' }, branch),
      h('a', { href: historyHref(branch), class: 'small-link', testid: 'history-link' }, 'history'),
      statusEl,
      usageEl
    ),
    h(
      'div',
      { class: 'session-sticky' },
      h('div', { class: 'session-tools' }, context.el, search.box),
      search.results
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
    context.update();
    updateLoadButtons();
    refreshUsage();
  }

  // What the session's requests cost, read again when its head moves.
  let usageHead;
  async function refreshUsage() {
    if (usageHead === S.head) return;
    usageHead = S.head;
    let u;
    try {
      u = await api.usage(branch);
    } catch (_) {
      usageEl.replaceChildren();
      return;
    }
    if (!ctx.alive()) return;
    if (!u.request_count) {
      usageEl.replaceChildren();
      return;
    }
    const t = u.totals;
    const parts = [
      plural(u.request_count, 'request'),
      ' · in ' + fmtInt(t.input_tokens),
      ' · out ' + fmtInt(t.output_tokens),
      ' · cache read ' + fmtInt(t.cache_read_input_tokens),
      ' · cache write ' + fmtInt(t.cache_creation_input_tokens),
    ];
    if (u.cache_hit_rate != null) parts.push(' · cache hit ' + (u.cache_hit_rate * 100).toFixed(1) + '%');
    if ('cost' in u) parts.push(' · cost ' + (u.cost == null ? 'unknown' : u.cost.toFixed(4) + ' ' + u.currency));
    usageEl.title = 'What the requests of this session cost, summed along its history (tract usage)';
    usageEl.replaceChildren(...parts);
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

  /** Results shown inside their call's card need the call's entry: extend lo down to it. */
  async function ensureCallers() {
    const minCaller = list.lowestCaller(S.lo);
    if (minCaller < S.lo && minCaller >= 0) {
      const r = await api.viewRange(branch, minCaller, S.lo);
      if (!ctx.alive()) return;
      list.apply(r.entries);
      S.lo = minCaller;
    }
  }

  function adoptMeta(p) {
    if (!p) return;
    S.head = p.head ?? S.head;
    S.total = Number(p.total ?? S.total);
    S.tokens = Number(p.token_count ?? S.tokens);
  }

  // ---- first render
  adoptMeta(first);
  S.lo = Number(first.offset) || 0;
  const firstEntries = Array.isArray(first.entries) ? first.entries : [];
  S.hi = S.lo + firstEntries.length;
  list.apply(firstEntries);
  await ensureCallers();
  if (!ctx.alive()) return;
  if (S.total === 0) {
    bottomSlot.replaceChildren(h('p', { class: 'muted empty-view' }, 'This branch has no messages in its view yet.'));
  }
  updateStatus();
  ctx.app.replaceChildren(page);

  // ---- ?at=INDEX
  if (at != null) {
    if (at >= S.total) {
      bannerEl.replaceChildren(
        h('div', { class: 'notice' }, 'Message #' + at + ' is not in the view (it holds ' + plural(S.total, 'message') + ').')
      );
      scrollToBottom();
    } else {
      const target = list.target(at);
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

  // ---- loading more; loads and refreshes run one at a time, each on what the last left
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
        const r = await api.viewRange(branch, newLo, S.lo);
        if (!ctx.alive()) return;
        const anchor = list.anchor();
        list.apply(r.entries);
        S.lo = newLo;
        await ensureCallers();
        if (!ctx.alive()) return;
        if (r.meta && r.meta.head !== S.head) scheduleRefresh();
        if (earlierBtn) earlierBtn.disabled = false;
        updateStatus();
        list.keep(anchor);
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
        const r = await api.viewRange(branch, S.hi, newHi);
        if (!ctx.alive()) return;
        const anchor = list.anchor();
        list.apply(r.entries);
        S.hi = Math.max(S.hi, S.hi + r.entries.length);
        adoptMeta(r.meta);
        if (laterBtn) laterBtn.disabled = false;
        updateStatus();
        list.keep(anchor);
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

  async function refresh() {
    if (!ctx.alive()) return;
    const wasBottom = atBottom();
    const anchor = wasBottom ? null : list.anchor();
    const oldTotal = S.total;
    const atTail = S.hi >= oldTotal;
    // Which loaded entries could have changed: all of them when few are loaded (edits of
    // any message show up then), else from the lowest pending call or the old end.
    let from = S.hi - S.lo <= api.MAX_LIMIT ? S.lo : Math.max(S.lo, Math.min(list.lowestPending(), oldTotal, S.hi));
    let r = await api.viewRange(branch, from, atTail ? null : S.hi);
    if (!ctx.alive()) return;
    let meta = r.meta;
    if (!meta) return;
    const newTotal = Number(meta.total);
    // A structural change (compress, reset): indexes no longer hold the same positions.
    let structural = newTotal < oldTotal;
    for (const e of r.entries) {
      const old = list.get(Number(e.index));
      if (old && old.commit_hash !== e.commit_hash) structural = true;
    }
    if (structural && from > S.lo) {
      const span = (atTail ? newTotal : S.hi) - S.lo;
      if (span <= 4 * api.MAX_LIMIT) {
        from = S.lo;
        r = await api.viewRange(branch, from, atTail ? null : Math.min(S.hi, newTotal));
        if (!ctx.alive()) return;
        meta = r.meta || meta;
      }
    }
    if ((atTail && Number(meta.total) - S.hi > 4 * api.MAX_LIMIT) || (S.lo > 0 && S.lo >= Number(meta.total))) {
      // Far too much arrived at once, or the view shrank below what is loaded: start over
      // on the newest page.
      list.clear();
      const p = await api.view(branch, null, PAGE);
      if (!ctx.alive()) return;
      adoptMeta(p);
      S.lo = Number(p.offset) || 0;
      S.hi = S.lo + (p.entries || []).length;
      list.apply(p.entries || []);
      await ensureCallers();
      if (!ctx.alive()) return;
      updateStatus();
      if (wasBottom) scrollToBottom();
      return;
    }
    adoptMeta(meta);
    list.dropFrom(S.total);
    list.apply(r.entries);
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
    else list.keep(anchor);
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
    const es = api.events(branch);
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


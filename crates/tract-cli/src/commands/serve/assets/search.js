// Search in a session: its view, or the whole history of its branch, or every session (where
// a hit may be a message no longer in the view, or another branch's, linked to its commit).
// Hits come best first, a page at a time; the words that matched are marked.

import * as api from './api.js';
import { h } from './dom.js';
import { errorBox } from './errors.js';
import { agentLabel, plural, shortId, timeEl } from './format.js';
import { commitHref, sessionHref } from './routes.js';

/** Hits asked for at once. */
const PAGE = 50;
/** Branch names shown on a hit; the rest are counted. */
const BRANCHES_SHOWN = 3;

/** The search box (`box`) and where its hits are shown (`results`). */
export function searchBox(ctx, branch) {
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
  const searchAll = h('input', { type: 'checkbox', testid: 'search-all', id: 'search-all' });
  const searchBtn = h('button', { type: 'button', class: 'btn', testid: 'search-button' }, 'Search');
  const searchResults = h('div', { class: 'search-results', testid: 'search-results', hidden: true });
  let searchSeq = 0; // only the latest search's answers are shown
  let current = null; // the search shown: its query, options, list and hits so far

  function close() {
    searchSeq++;
    current = null;
    searchResults.hidden = true;
    searchResults.replaceChildren();
  }

  async function runSearch() {
    const q = searchInput.value.trim();
    const seq = ++searchSeq;
    if (!q) {
      close();
      return;
    }
    const opts = { history: searchHistory.checked, all: searchAll.checked };
    searchResults.hidden = false;
    searchResults.replaceChildren(h('p', { class: 'muted' }, 'Searching…'));
    try {
      const res = await api.search(branch, q, { ...opts, offset: 0, limit: PAGE });
      if (seq !== searchSeq || !ctx.alive()) return;
      const hits = Array.isArray(res.hits) ? res.hits : [];
      const closeBtn = h('button', { type: 'button', class: 'btn-link', 'aria-label': 'Close search results' }, 'close');
      closeBtn.addEventListener('click', close);
      const count = h('strong');
      const list = h('ol', { class: 'hits' });
      const moreSlot = h('div', { class: 'search-more-slot' });
      current = { seq, q, opts, list, count, moreSlot, shown: 0 };
      searchResults.replaceChildren(
        h(
          'div',
          { class: 'search-head' },
          count,
          ' for “',
          q,
          '”',
          opts.all ? ' in every session' : '',
          opts.history ? ' in the whole history' : opts.all ? '' : ' in the view',
          h('span', { class: 'spacer' }),
          closeBtn
        ),
        hits.length ? list : h('p', { class: 'muted' }, 'Nothing found.'),
        moreSlot
      );
      show(current, hits, res.more === true);
    } catch (err) {
      if (seq !== searchSeq || !ctx.alive()) return;
      searchResults.replaceChildren(errorBox(err, 'Search failed.'));
    }
  }

  /** Adds `hits` to the search `s` shows, with a button for the next page when `more`. */
  function show(s, hits, more) {
    for (const hit of hits) s.list.appendChild(hitItem(branch, hit, s.opts.all));
    s.shown += hits.length;
    s.count.textContent = plural(s.shown, 'hit') + (more ? ' so far' : '');
    if (!more) {
      s.moreSlot.replaceChildren();
      return;
    }
    const btn = h('button', { type: 'button', class: 'btn', testid: 'search-more' }, 'More hits');
    btn.addEventListener('click', () => loadMore(s, btn));
    s.moreSlot.replaceChildren(btn);
  }

  async function loadMore(s, btn) {
    btn.disabled = true;
    btn.textContent = 'Loading…';
    try {
      const res = await api.search(branch, s.q, { ...s.opts, offset: s.shown, limit: PAGE });
      if (s !== current || s.seq !== searchSeq || !ctx.alive()) return;
      show(s, Array.isArray(res.hits) ? res.hits : [], res.more === true);
    } catch (err) {
      if (s !== current || !ctx.alive()) return;
      s.moreSlot.replaceChildren(errorBox(err, 'Loading more hits failed.'));
    }
  }

  searchInput.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      runSearch();
    }
  });
  searchBtn.addEventListener('click', runSearch);
  for (const c of [searchHistory, searchAll]) {
    c.addEventListener('change', () => {
      if (searchInput.value.trim()) runSearch();
    });
  }

  const box = h(
    'div',
    { class: 'search' },
    searchInput,
    h('label', { class: 'check', for: 'search-history' }, searchHistory, ' whole history'),
    h('label', { class: 'check', for: 'search-all' }, searchAll, ' all sessions'),
    searchBtn
  );
  return { box, results: searchResults };
}

/** One hit: where it is, its snippet with the matches marked, and (searching every session)
 *  the branches that hold it. */
function hitItem(branch, hit, all) {
  const href = hit.index != null ? sessionHref(branch, hit.index) : commitHref(hit.commit_hash);
  const tools = Array.isArray(hit.tool_names) && hit.tool_names.length ? hit.tool_names.join(', ') : '';
  const agents = hit.agents && typeof hit.agents === 'object' ? hit.agents : {};
  // Each branch with the agent whose session it holds: "codex/…/019c… (codex 0.125.0)".
  const branches = Array.isArray(hit.branches) ? hit.branches.map(String) : [];
  const named = branches.map((b) => (agents[b] ? b + ' (' + agentLabel(agents[b].agent, agents[b].version) + ')' : b));
  // Not in this view: an earlier version in this branch's history, or another branch's.
  const place =
    hit.index != null
      ? h('span', { class: 'muted' }, '#' + hit.index)
      : branches.includes(branch) || !all
        ? h('span', { class: 'badge badge-old', title: 'Not in the view any more' }, 'history')
        : h('span', { class: 'badge badge-old', title: 'Not in this session' }, 'elsewhere');
  return h(
    'li',
    { class: 'search-hit', testid: 'search-hit', dataset: { id: hit.commit_hash, index: hit.index } },
    h(
      'a',
      { href },
      h(
        'span',
        { class: 'hit-meta' },
        h('span', { class: 'role' }, hit.role || hit.op || ''),
        tools ? h('span', { class: 'tool-name' }, tools) : null,
        place,
        h('span', { class: 'id-text' }, shortId(hit.commit_hash)),
        timeEl(hit.timestamp_us, hit.created_at),
        all && branches.length
          ? h('span', { class: 'hit-branches', testid: 'hit-branches', title: named.join(', ') }, branchList(named))
          : null
      ),
      h('span', { class: 'snippet', testid: 'hit-snippet' }, marked(hit.snippet, hit.highlights))
    )
  );
}

function branchList(names) {
  const shown = names.slice(0, BRANCHES_SHOWN).join(', ');
  return names.length > BRANCHES_SHOWN ? shown + ' +' + (names.length - BRANCHES_SHOWN) : shown;
}

/** The snippet as text, each matched range in a <mark>. The ranges are byte offsets into its
 *  UTF-8 (as the API gives them); one that is out of order or out of bounds is left out. */
function marked(snippet, ranges) {
  const text = snippet == null ? '' : String(snippet);
  if (!Array.isArray(ranges) || ranges.length === 0) return [text];
  const bytes = new TextEncoder().encode(text);
  const dec = new TextDecoder();
  const out = [];
  let at = 0;
  for (const r of ranges) {
    const a = Array.isArray(r) ? Number(r[0]) : NaN;
    const b = Array.isArray(r) ? Number(r[1]) : NaN;
    if (!Number.isInteger(a) || !Number.isInteger(b) || a < at || b <= a || b > bytes.length) continue;
    if (a > at) out.push(dec.decode(bytes.subarray(at, a)));
    out.push(h('mark', { class: 'hit-mark' }, dec.decode(bytes.subarray(a, b))));
    at = b;
  }
  if (at < bytes.length) out.push(dec.decode(bytes.subarray(at)));
  return out;
}

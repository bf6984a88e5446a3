// Search in a session: its view, or the whole history of its branch (where a hit may be a
// message no longer in the view, linked to its commit).

import * as api from './api.js';
import { h } from './dom.js';
import { errorBox } from './errors.js';
import { plural, shortId, timeEl } from './format.js';
import { commitHref, sessionHref } from './routes.js';

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
  const searchBtn = h('button', { type: 'button', class: 'btn', testid: 'search-button' }, 'Search');
  const searchResults = h('div', { class: 'search-results', testid: 'search-results', hidden: true });
  let searchSeq = 0; // only the latest search's answer is shown
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
      const res = await api.search(branch, q, searchHistory.checked);
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
                const href = hit.index != null ? sessionHref(branch, hit.index) : commitHref(hit.commit_hash);
                const tools = Array.isArray(hit.tool_names) && hit.tool_names.length ? hit.tool_names.join(', ') : '';
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
                      hit.index != null
                        ? h('span', { class: 'muted' }, '#' + hit.index)
                        : h('span', { class: 'badge badge-old', title: 'Not in the view any more' }, 'history'),
                      h('span', { class: 'id-text' }, shortId(hit.commit_hash)),
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

  const box = h(
    'div',
    { class: 'search' },
    searchInput,
    h('label', { class: 'check', for: 'search-history' }, searchHistory, ' whole history'),
    searchBtn
  );
  return { box, results: searchResults };
}

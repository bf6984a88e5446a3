// What a message in the view came from, each a <details> fetched when first opened: the
// earlier versions of an edited message, and the messages a summary (compress) replaced.

import * as api from './api.js';
import { h } from './dom.js';
import { errorBox } from './errors.js';
import { fmtInt, plural, shortId, shownText, shownTokens, timeEl } from './format.js';
import { commitHref } from './routes.js';

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

/** The `count` versions of the message at `position`, the original first. */
export function versionsDetails(position, count) {
  return lazyDetails({
    testid: 'versions',
    key: 'versions:' + position,
    cls: 'versions',
    summary: plural(count, 'version'),
    load: async () => {
      const d = await api.commit(position);
      const versions = Array.isArray(d.versions) ? d.versions : [];
      if (!versions.length) return [h('p', { class: 'muted' }, 'No versions recorded.')];
      return [
        h(
          'ol',
          { class: 'version-list' },
          versions.map((v, i) =>
            h(
              'li',
              { class: 'version' + (v.current ? ' current' : ''), testid: 'version', dataset: { current: v.current ? 'true' : 'false', id: v.commit_hash } },
              h(
                'div',
                { class: 'version-head' },
                h('span', { class: 'version-label' }, i === 0 ? 'Original' : 'Version ' + (i + 1)),
                v.current ? h('span', { class: 'badge badge-current' }, 'current') : null,
                h('span', { class: 'op' }, v.op || ''),
                v.token_count != null ? h('span', { class: 'muted' }, fmtInt(v.token_count) + ' tok') : null,
                timeEl(v.timestamp_us, v.created_at),
                h('a', { class: 'id-link', href: commitHref(v.commit_hash), title: v.commit_hash }, shortId(v.commit_hash))
              ),
              v.note ? h('div', { class: 'note' }, v.note) : null,
              h('pre', { class: 'version-text mono', testid: 'version-text' }, v.content == null ? '' : String(v.content))
            )
          )
        ),
      ];
    },
  });
}

/** The messages the summary at `position` replaced (`count` of them, when known). */
export function sourcesDetails(position, count) {
  return lazyDetails({
    testid: 'sources',
    key: 'sources:' + position,
    cls: 'sources',
    summary: count != null ? plural(count, 'source message') : 'Source messages',
    load: async () => {
      const d = await api.commit(position);
      const sources = Array.isArray(d.sources) ? d.sources : [];
      if (!sources.length) return [h('p', { class: 'muted' }, 'No sources recorded.')];
      return [
        h(
          'ol',
          { class: 'source-list' },
          sources.map((s) =>
            h(
              'li',
              { class: 'source role-' + (s.role || 'unknown'), testid: 'source', dataset: { id: s.commit_hash } },
              h(
                'div',
                { class: 'source-head' },
                h('span', { class: 'role' }, s.role || '?'),
                s.name ? h('span', { class: 'name' }, s.name) : null,
                h('span', { class: 'muted' }, fmtInt(shownTokens(s)) + ' tok'),
                h('a', { class: 'id-link', href: commitHref(s.commit_hash), title: s.commit_hash }, shortId(s.commit_hash))
              ),
              h('pre', { class: 'source-text mono', testid: 'source-text' }, shownText(s))
            )
          )
        ),
      ];
    },
  });
}

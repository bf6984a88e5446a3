// One commit (page #/commit/ID): its message, its raw JSON and its provenance, each relation
// a link to the commit it names.

import * as api from './api.js';
import { h } from './dom.js';
import { roleLabel } from './entry.js';
import { fmtInt, prettyJsonText, shortId, shownText, shownTokens, timeEl } from './format.js';
import { commitHref, diffHref, historyHref, sessionHref } from './routes.js';
import { setCrumbs } from './topbar.js';

export async function pageCommit(ctx, id) {
  setCrumbs([{ text: 'Sessions', href: '#/' }, { text: 'commit ' + shortId(id) }]);
  const d = await api.commit(id);
  if (!ctx.alive()) return;
  const raw = d.commit && typeof d.commit === 'object' ? d.commit : {};
  const full = raw.commit_hash || id;
  const branches = Array.isArray(d.branches) ? d.branches : [];
  const msg = raw.message && typeof raw.message === 'object' ? raw.message : null;
  const role = (msg && msg.role) || raw.role || null;
  const crumbs = [{ text: 'Sessions', href: '#/' }];
  if (branches.length) crumbs.push({ text: branches[0], href: sessionHref(branches[0]) });
  crumbs.push({ text: 'commit ' + shortId(full) });
  setCrumbs(crumbs);

  const link = (rel, cid) =>
    h('a', { class: 'id-link prov-link', testid: 'prov-link', dataset: { rel, id: cid }, href: commitHref(cid), title: cid }, shortId(cid));

  const prov = [];
  const group = (title, items) => {
    if (!items || !items.length) return;
    prov.push(h('div', { class: 'prov-group' }, h('dt', null, title), h('dd', null, items)));
  };

  const parents = Array.isArray(raw.parents) ? raw.parents : [];
  group(
    parents.length > 1 ? 'Parents (merge)' : 'Parent',
    parents.map((p, i) =>
      h('span', { class: 'prov-item' }, link('parent', p), parents.length > 1 ? h('span', { class: 'muted' }, i === 0 ? ' first parent' : ' merged tip') : null)
    )
  );
  const editTarget = raw.edit_target;
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
              { class: 'prov-item' + (v.commit_hash === full ? ' this' : '') },
              link('version', v.commit_hash),
              ' ',
              h('span', { class: 'muted' }, i === 0 ? 'original' : 'edit ' + i),
              v.current ? h('span', { class: 'badge badge-current' }, 'current') : null,
              v.commit_hash === full ? h('span', { class: 'badge badge-this' }, 'this commit') : null,
              v.token_count != null ? h('span', { class: 'muted' }, ' ' + fmtInt(v.token_count) + ' tok') : null,
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
            link('source', s.commit_hash),
            ' ',
            h('span', { class: 'role' }, s.role || ''),
            s.name ? h('span', { class: 'name' }, ' ' + s.name) : null,
            h('span', { class: 'muted' }, ' ' + fmtInt(shownTokens(s)) + ' tok'),
            h('div', { class: 'source-preview' }, shownText(s).slice(0, 300))
          )
        )
      ),
    ]);
  }
  if (raw.compressed_into) group('Compressed into', [h('span', { class: 'prov-item' }, link('compressed-into', raw.compressed_into))]);
  const merge = raw.merge || null;
  if (merge && typeof merge === 'object') {
    const tip = merge.tip_hash;
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
  const text = raw.content == null ? '' : String(raw.content);
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
      raw.token_count != null ? h('span', { class: 'muted' }, fmtInt(raw.token_count) + ' tokens') : null,
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
    h('p', null, h('a', { class: 'diff-link', testid: 'commit-diff', href: diffHref(full) }, 'What this commit did to the view')),
    h('h2', null, 'Provenance'),
    prov.length ? h('dl', { class: 'prov' }, prov) : h('p', { class: 'muted' }, 'A root commit with no other relations.'),
    h('h2', null, 'Raw commit'),
    h('pre', { class: 'raw mono', testid: 'commit-raw' }, JSON.stringify(d.commit, null, 2)),
    msg ? h('details', { class: 'raw-message' }, h('summary', null, 'Message JSON'), h('pre', { class: 'raw mono' }, JSON.stringify(msg, null, 2))) : null
  );
  ctx.app.replaceChildren(pageEl);
  window.scrollTo(0, 0);
}

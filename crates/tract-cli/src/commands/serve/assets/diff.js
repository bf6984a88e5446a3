// Two contexts compared (page #/diff?a=REV&b=REV), or what one commit did to its view
// (#/diff?a=REV): where the views part, the messages only one holds, those edited between
// them, never the messages both share (docs/serve.md, GET /api/diff).

import * as api from './api.js';
import { h } from './dom.js';
import { renderEntry } from './entry.js';
import { fmtInt, plural, shortId } from './format.js';
import { commitHref } from './routes.js';
import { setCrumbs } from './topbar.js';

/** One side's line: its revision, commit, messages and tokens. */
function side(s, testid) {
  return h(
    'div',
    { class: 'diff-side', testid },
    h('strong', null, s.rev),
    s.commit_hash ? [' at ', h('a', { class: 'id-link', href: commitHref(s.commit_hash), title: s.commit_hash }, shortId(s.commit_hash))] : ' (empty)',
    ' · ' + plural(s.message_count, 'message') + ' · ' + fmtInt(s.token_count) + ' tok'
  );
}

/** A message as the session page shows it, with the tool calls it makes (a diff shows it
 *  apart from its view, so not as cards with their results). */
function message(m, branch) {
  const node = renderEntry(m, branch);
  const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
  if (calls.length) {
    node.appendChild(
      h(
        'pre',
        { class: 'tool-args mono', testid: 'diff-calls' },
        calls.map((c) => String(c.name) + '(' + String(c.arguments) + ')').join('\n')
      )
    );
  }
  return node;
}

/** A section of messages. */
function section(title, testid, messages, branch) {
  if (!messages.length) return null;
  return h(
    'section',
    { class: 'diff-section ' + testid, testid },
    h('h3', null, title + ' (' + messages.length + ')'),
    messages.map((m) => message(m, branch))
  );
}

export async function pageDiff(ctx, params) {
  const a = params.get('a');
  const b = params.get('b');
  setCrumbs([{ text: 'Sessions', href: '#/' }, { text: b ? 'diff ' + a + ' ' + b : 'diff ' + (a || '') }]);
  if (!a) throw new api.ApiError('bad_request', 'A diff names its revisions: #/diff?a=REV&b=REV, or #/diff?a=REV for what one commit did.', 400);
  const d = await api.diff(a, b);
  if (!ctx.alive()) return;
  const onlyA = Array.isArray(d.only_a) ? d.only_a : [];
  const onlyB = Array.isArray(d.only_b) ? d.only_b : [];
  const changed = Array.isArray(d.changed) ? d.changed : [];
  const delta = Number(d.token_delta || 0);
  const parts = [];
  if (d.commit && d.commit.commit_hash) {
    parts.push(
      h(
        'p',
        { class: 'diff-commit', testid: 'diff-commit' },
        'What ',
        h('a', { class: 'id-link', href: commitHref(d.commit.commit_hash) }, shortId(d.commit.commit_hash)),
        ' (' + (d.commit.op || 'commit') + ') did to its view'
      )
    );
  }
  parts.push(side(d.a, 'diff-a'), side(d.b, 'diff-b'));
  parts.push(
    h(
      'p',
      { class: 'diff-summary', testid: 'diff-summary' },
      (onlyA.length + onlyB.length + changed.length === 0
        ? 'The same view'
        : 'They part after ' + plural(d.shared_prefix_count, 'message')) +
        ' · ' + fmtInt(d.shared_count) + ' shared · ' +
        (delta > 0 ? '+' : '') + fmtInt(delta) + ' tok'
    )
  );
  const sections = [
    section('Only in ' + d.a.rev, 'diff-removed', onlyA, d.a.rev),
    section('Only in ' + d.b.rev, 'diff-added', onlyB, d.b.rev),
  ];
  if (changed.length) {
    sections.push(
      h(
        'section',
        { class: 'diff-section diff-changed', testid: 'diff-changed' },
        h('h3', null, 'Changed (' + changed.length + ')'),
        changed.map((c) =>
          h('div', { class: 'diff-pair', testid: 'diff-pair' }, message(c.a, d.a.rev), message(c.b, d.b.rev))
        )
      )
    );
  }
  ctx.app.replaceChildren(h('div', { class: 'diff', testid: 'diff' }, parts, sections));
}

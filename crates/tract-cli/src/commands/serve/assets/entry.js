// An entry of a session's view: a message with its marks, and each of its tool calls as a
// card holding the call's result (results are shown in their call's card, not on their own).

import { h } from './dom.js';
import { fmtInt, humanBytes, humanDuration, plural, prettyJsonText, shortId, timeEl } from './format.js';
import { sourcesDetails, versionsDetails } from './provenance.js';
import { commitHref, historyHref, sessionHref } from './routes.js';

const MARK_LABELS = {
  edited: 'edited',
  summarized: 'summarized',
  cleared: 'cleared',
  redacted: 'redacted',
  repaired: 'repaired',
  scrubbed: 'scrubbed',
  'not-sent': 'not sent',
};
const MARK_TITLES = {
  edited: 'This content has earlier versions',
  summarized: 'A hook summarized this content; the original stays in history',
  cleared: 'Replaced by a placeholder by `tract clear`',
  redacted: 'The content was removed for good',
  repaired: 'A result `tract repair` committed for a call that had none',
  scrubbed: 'What looked like a credential was replaced by a marker before it was stored',
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

/** The entry's marks, then `extra` ones the page adds (`not-sent` for a result no call answers). */
function marksOf(entry, extra) {
  const out = [];
  const marks = Array.isArray(entry.marks) ? entry.marks : [];
  for (const m of marks) out.push(markEl(m));
  if (extra) for (const m of extra) out.push(markEl(m));
  return out;
}

/** Where another branch was merged back into this one. */
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
    m.tip_hash ? h('a', { class: 'id-link', href: commitHref(m.tip_hash), title: 'Merged tip ' + m.tip_hash }, shortId(m.tip_hash)) : null,
    h('a', { class: 'small-link', href: historyHref(m.branch) }, 'history')
  );
}

/** A message of several content parts (text, images...): their JSON, folded. */
function partsDetails(entry) {
  if (!Array.isArray(entry.parts) || !entry.parts.length) return null;
  const kinds = entry.parts.map((p) => (p && typeof p === 'object' && p.type ? String(p.type) : typeof p));
  return h(
    'details',
    { class: 'parts', dataset: { key: 'parts:' + entry.commit_hash } },
    h('summary', null, plural(entry.parts.length, 'content part') + ' (' + kinds.join(', ') + ')'),
    h('pre', { class: 'mono' }, JSON.stringify(entry.parts, null, 2))
  );
}

export function roleLabel(role) {
  return { user: 'User', assistant: 'Assistant', system: 'System', tool: 'Tool result' }[role] || String(role || 'message');
}

function toolCard(call, parentEntry) {
  const r = call.result || null;
  let state = call.state;
  if (state !== 'pending' && state !== 'ok' && state !== 'error') state = r ? (r.is_error ? 'error' : 'ok') : 'pending';
  const card = h('div', {
    class: 'tool-card state-' + state,
    testid: 'tool-card',
    dataset: { callId: call.call_id, tool: call.name, state },
  });
  const head = h(
    'div',
    { class: 'tool-head' },
    h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, '⚙'),
    h('span', { class: 'tool-name', testid: 'tool-name' }, call.name == null ? '' : String(call.name)),
    h('span', { class: 'badge state state-' + state, testid: 'tool-state' }, state),
    h(
      'span',
      { class: 'tool-duration', testid: 'tool-duration', title: call.duration_ms != null ? call.duration_ms + ' ms' : 'no result yet' },
      call.duration_ms != null ? humanDuration(call.duration_ms * 1000) : state === 'pending' ? 'no result yet' : ''
    ),
    r ? marksOf(r, r.caller == null ? ['not-sent'] : null) : null,
    h('span', { class: 'spacer' }),
    h('span', { class: 'call-id', title: 'Call id' }, call.call_id == null ? '' : String(call.call_id))
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
      { class: 'tool-result', testid: 'tool-result', dataset: { key: 'result:' + call.call_id + ':' + parentEntry.commit_hash } },
      h(
        'summary',
        null,
        h('span', { class: 'result-label' }, r.is_error ? 'Error result' : 'Result'),
        h('span', { class: 'result-size', title: fmtInt(r.byte_count) + ' bytes' }, humanBytes(r.byte_count)),
        h('span', { class: 'result-tokens' }, fmtInt(r.token_count) + ' tokens'),
        r.index != null ? h('span', { class: 'muted' }, '#' + r.index) : null
      ),
      h(
        'div',
        { class: 'result-body' },
        r.note ? h('div', { class: 'note' }, r.note) : null,
        h('pre', { class: 'result-text mono', testid: 'result-text' }, r.content == null ? '' : String(r.content)),
        partsDetails(r),
        r.op === 'compress' ? sourcesDetails(r.commit_hash, Array.isArray(r.sources) ? r.sources.length : null) : null,
        h(
          'div',
          { class: 'result-foot' },
          h('a', { class: 'id-link', href: commitHref(r.current_hash), title: 'Result commit ' + r.current_hash }, shortId(r.current_hash)),
          r.created_at || r.timestamp_us ? timeEl(r.timestamp_us, r.created_at) : null
        )
      )
    );
    card.appendChild(res);
    if (Number(r.version_count) > 1) card.appendChild(versionsDetails(r.commit_hash, r.version_count));
  }
  return card;
}

/** The entry's element; `branch` is the session it is shown in, for its #INDEX link. */
export function renderEntry(e, branch) {
  const role = e.role || 'unknown';
  const orphan = role === 'tool' && e.caller == null;
  const node = h('article', {
    class: 'entry role-' + role + ' op-' + (e.op || 'append') + (orphan ? ' orphan' : ''),
    testid: 'entry',
    id: 'entry-' + e.index,
    dataset: { index: e.index, role, op: e.op || 'append', position: e.commit_hash },
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
      h('span', { class: 'tokens', title: 'tokens' }, h('span', { testid: 'entry-tokens' }, String(e.token_count ?? 0)), ' tok'),
      timeEl(e.timestamp_us, e.created_at),
      h('a', { class: 'id-link', href: commitHref(e.current_hash), title: 'Commit ' + e.current_hash }, shortId(e.current_hash)),
      h('a', { class: 'idx', href: sessionHref(branch, e.index), title: 'Link to this message' }, '#' + e.index)
    )
  );

  const text = e.content == null ? '' : String(e.content);
  const textEl = h(
    role === 'tool' || role === 'system' ? 'pre' : 'div',
    { class: 'entry-text' + (role === 'tool' ? ' mono' : '') + (text ? '' : ' empty'), testid: 'entry-text' },
    text
  );

  if (e.op === 'compress') {
    const n = Array.isArray(e.sources) ? e.sources.length : null;
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
          e.summarizer ? h('span', { class: 'muted' }, ' · ' + e.summarizer) : null
        ),
        textEl,
        sourcesDetails(e.commit_hash, n)
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
  if (Number(e.version_count) > 1) node.appendChild(versionsDetails(e.commit_hash, e.version_count));
  if (e.merge) node.appendChild(mergeBlock(e.merge));
  if (Array.isArray(e.calls) && e.calls.length) {
    node.appendChild(h('div', { class: 'tool-calls' }, e.calls.map((c) => toolCard(c, e))));
  }
  return node;
}

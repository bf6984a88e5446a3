// The list of sessions (page #/): every branch with its counts, filtered by name.

import * as api from './api.js';
import { h } from './dom.js';
import { agentLabel, fmtInt, plural, shortId, timeEl } from './format.js';
import { commitHref, historyHref, sessionHref } from './routes.js';
import { setCrumbs } from './topbar.js';

// Kept while the page is open, so coming back to the list keeps its filter.
let sessionFilter = '';

export async function pageSessions(ctx, params) {
  setCrumbs([{ text: 'Sessions' }]);
  if (params && params.has('filter')) sessionFilter = params.get('filter') || '';
  const data = await api.sessions();
  if (!ctx.alive()) return;
  const sessions = Array.isArray(data.sessions) ? data.sessions : [];

  const input = h('input', {
    type: 'search',
    class: 'filter',
    testid: 'session-filter',
    placeholder: 'Filter by name or agent',
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
        h('th', null, 'Agent'),
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
      h('td', null, h('span', { class: 'agent', testid: 'session-agent' }, agentLabel(s.agent, s.agent_version))),
      h('td', { class: 'num' }, h('span', { testid: 'session-messages' }, String(s.messages ?? 0))),
      h('td', { class: 'num' }, h('span', { testid: 'session-tokens' }, String(s.token_count ?? 0))),
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
    // The agent is matched too: "codex" lists Codex's sessions.
    const matches = (s) => (String(s.name) + ' ' + agentLabel(s.agent, s.agent_version)).toLowerCase().includes(f);
    const shown = f ? sessions.filter(matches) : sessions;
    const rows = shown.map(row);
    if (!rows.length) {
      rows.push(
        h(
          'tr',
          { class: 'empty' },
          h('td', { colspan: '6' }, sessions.length ? 'No branch name contains “' + input.value.trim() + '”.' : 'This store has no branches yet.')
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

// A branch's history (page #/history/BRANCH): its commits newest first beside their graph,
// where other branches fork, and more of it on demand.

import * as api from './api.js';
import { h } from './dom.js';
import { errorBox } from './errors.js';
import { fmtInt, plural, shortId, timeEl } from './format.js';
import { commitGraph } from './graph.js';
import { commitHref, historyHref, sessionHref } from './routes.js';
import { setCrumbs } from './topbar.js';

export async function pageHistory(ctx, branch) {
  setCrumbs([{ text: 'Sessions', href: '#/' }, { text: branch, href: sessionHref(branch) }, { text: 'history' }]);
  let limit = 200;
  const container = h('div', { class: 'history', testid: 'history', dataset: { branch } });
  const moreSlot = h('div', { class: 'load-slot bottom' });
  const info = h('span', { class: 'muted count' });

  async function load() {
    const data = await api.history(branch, limit);
    if (!ctx.alive()) return;
    renderHistory(container, data);
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

/** Fills `container` with a row per commit, and a row for each branch that forks at one. */
function renderHistory(container, data) {
  const commits = Array.isArray(data.commits) ? data.commits : [];
  const n = commits.length;
  const gutter = commitGraph(commits, data.more);
  const forksAt = new Map();
  const forks = Array.isArray(data.forks) ? data.forks : [];
  for (const f of forks) {
    if (!forksAt.has(f.at)) forksAt.set(f.at, []);
    forksAt.get(f.at).push(f);
  }

  const rows = [];
  commits.forEach((c, i) => {
    for (const f of forksAt.get(c.commit_hash) || []) {
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
    const tools = Array.isArray(c.tool_names) ? c.tool_names : [];
    const tips = Array.isArray(c.branches) ? c.branches : [];
    rows.push(
      h(
        'div',
        {
          class: 'hrow commit' + (c.first_parent ? ' fp' : ' side'),
          testid: 'history-row',
          dataset: { id: c.commit_hash, op: c.op, firstParent: c.first_parent ? 'true' : 'false' },
        },
        gutter(i, false),
        h(
          'div',
          { class: 'hcells' },
          h('a', { class: 'id-link', href: commitHref(c.commit_hash), title: c.commit_hash }, shortId(c.commit_hash)),
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
          c.token_count != null ? h('span', { class: 'muted tok' }, fmtInt(c.token_count) + ' tok') : null,
          timeEl(c.timestamp_us, c.created_at)
        )
      )
    );
  });
  const shown = new Set(commits.map((c) => c.commit_hash));
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

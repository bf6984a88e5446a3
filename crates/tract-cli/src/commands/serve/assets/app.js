// tract serve's page: the module index.html loads, which shows the page the hash after `#`
// names. Native ES modules, no build step, no dependency; the server serves each one at
// /assets/NAME from its table in serve.rs. How untrusted text is kept text: dom.js.

import * as api from './api.js';
import { pageCommit } from './commit.js';
import { pageDiff } from './diff.js';
import { h } from './dom.js';
import { errorBox } from './errors.js';
import { pageHistory } from './history.js';
import { parseHash } from './routes.js';
import { pageSession } from './session.js';
import { pageSessions } from './session-list.js';
import { loadStore, setCrumbs, setLive } from './topbar.js';

// Each route gets a generation: a page still loading when another route starts sees that it
// is no longer alive and leaves the page alone.
let routeGen = 0;
let leaveFns = [];

/** Runs what the page shown asked to run when it is left (closing its event stream). */
function leave() {
  for (const fn of leaveFns) {
    try {
      fn();
    } catch (_) {
      /* ignore */
    }
  }
  leaveFns = [];
}

/** Shows the page the hash names. A page gets ctx: { alive(), onLeave(fn), app }. */
function route() {
  leave();
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
    else if (r.name === 'diff') p = pageDiff(ctx, r.params);
    else {
      setCrumbs([{ text: 'Sessions', href: '#/' }, { text: 'Unknown page' }]);
      p = Promise.reject(
        new api.ApiError('not_found', 'There is no page at #' + (r.raw || '') + '. Pages are #/, #/session/BRANCH, #/history/BRANCH, #/commit/ID and #/diff?a=REV&b=REV.', 404)
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
      if (typeof console !== 'undefined' && !(err instanceof api.ApiError)) console.error(err);
      app.replaceChildren(errorBox(err));
      document.body.dataset.ready = '1';
    }
  );
}

window.addEventListener('hashchange', route);
window.addEventListener('pagehide', leave);
loadStore();
route();

// The bar at the top of the page: the store's name, the breadcrumbs and the live indicator.

import * as api from './api.js';
import { h } from './dom.js';

/** items: [{ text, href? }], the last one the page shown; it also names the tab. */
export function setCrumbs(items) {
  const nav = document.getElementById('crumbs');
  if (!nav) return;
  const parts = [];
  items.forEach((it, i) => {
    if (i > 0) parts.push(h('span', { class: 'sep', 'aria-hidden': 'true' }, '›'));
    parts.push(it.href ? h('a', { href: it.href }, it.text) : h('span', { class: 'here' }, it.text));
  });
  nav.replaceChildren(...parts);
  const last = items[items.length - 1];
  document.title = (last ? last.text + ' · ' : '') + 'tract';
}

let liveEl = null;
/** state: 'on', 'connecting' or 'off' (a session's event stream), or none to hide it. */
export function setLive(state, text) {
  liveEl = liveEl || document.getElementById('live');
  if (!liveEl) return;
  if (!state) {
    liveEl.hidden = true;
    return;
  }
  liveEl.hidden = false;
  liveEl.className = 'live live-' + state;
  liveEl.textContent = text;
}

/** Names the store by the folder that holds its `.tract/`; its full path in the title. */
export async function loadStore() {
  const el = document.getElementById('store-name');
  if (!el) return;
  try {
    const s = await api.store();
    const full = String(s.store || '');
    const m = full.match(/([^/\\]+)[/\\]\.tract[/\\][^/\\]+$/);
    el.textContent = m ? m[1] : full;
    el.title = full + (s.version ? ' · tract ' + s.version : '') + (s.head ? ' · HEAD: ' + s.head : '');
    el.dataset.store = full;
  } catch (e) {
    el.textContent = '';
    el.title = '';
  }
}

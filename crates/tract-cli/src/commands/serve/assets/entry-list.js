// The entries of a session's view that the page holds, by index, and their elements in index
// order. An entry is rendered again only when its JSON changed, so a live update leaves the
// others, and the details the reader opened, as they are.

import { h } from './dom.js';
import { renderEntry } from './entry.js';

/** A tool result shown in its call's card rather than on its own. */
const isHidden = (e) => e.role === 'tool' && e.caller != null;

export class EntryList {
  constructor(branch) {
    this.branch = branch;
    this.el = h('div', { class: 'entries' });
    this.entries = new Map(); // index -> entry
    this.sigs = new Map(); // index -> JSON text of the entry as last rendered
    this.nodes = new Map(); // index -> shown element
  }

  get(index) {
    return this.entries.get(index);
  }

  /** Renders entries (in index order), replacing only those that changed. */
  apply(list) {
    const sorted = list.slice().sort((a, b) => a.index - b.index);
    for (const e of sorted) {
      const idx = Number(e.index);
      const sig = JSON.stringify(e);
      if (this.sigs.get(idx) === sig) continue;
      this.entries.set(idx, e);
      this.sigs.set(idx, sig);
      const old = this.nodes.get(idx);
      const node = isHidden(e) ? null : renderEntry(e, this.branch);
      if (old && node) {
        const keys = openKeys(old);
        old.replaceWith(node);
        reopen(node, keys);
      } else if (old) {
        old.remove();
      } else if (node) {
        this.insert(idx, node);
      }
      if (node) this.nodes.set(idx, node);
      else this.nodes.delete(idx);
    }
  }

  /** Forgets the entries at `total` and after (the view got shorter). */
  dropFrom(total) {
    for (const idx of Array.from(this.entries.keys())) {
      if (idx >= total) {
        this.entries.delete(idx);
        this.sigs.delete(idx);
        const n = this.nodes.get(idx);
        if (n) n.remove();
        this.nodes.delete(idx);
      }
    }
  }

  clear() {
    for (const n of this.nodes.values()) n.remove();
    this.entries.clear();
    this.sigs.clear();
    this.nodes.clear();
  }

  /** The lowest index of a call whose result, held at `lo` or after, is shown in its card;
   *  `lo` when all of them are held. */
  lowestCaller(lo) {
    let min = lo;
    for (const [idx, e] of this.entries) {
      if (idx >= lo && isHidden(e) && Number(e.caller) < min) min = Number(e.caller);
    }
    return min;
  }

  /** The lowest index of an entry with a call still waiting for its result. */
  lowestPending() {
    let low = Infinity;
    for (const [idx, e] of this.entries) {
      if (Array.isArray(e.calls) && e.calls.some((c) => c.state === 'pending' || !c.result)) {
        if (idx < low) low = idx;
      }
    }
    return low;
  }

  /** The element that shows entry `index`: for a result, its call's card (opened). */
  target(index) {
    const e = this.entries.get(index);
    if (!e) return null;
    if (isHidden(e)) {
      const callerNode = this.nodes.get(Number(e.caller));
      if (!callerNode) return null;
      for (const card of callerNode.querySelectorAll('[data-testid=tool-card]')) {
        if (card.dataset.callId === String(e.tool_call_id)) {
          const det = card.querySelector('details[data-testid=tool-result]');
          if (det) det.open = true;
          return card;
        }
      }
      return callerNode;
    }
    return this.nodes.get(index) || null;
  }

  /** The first entry in sight and where it is, for keep() after the list changed. */
  anchor() {
    for (const child of this.el.children) {
      const r = child.getBoundingClientRect();
      if (r.bottom > 60) return { index: Number(child.dataset.index), top: r.top };
    }
    return null;
  }

  /** Scrolls so that the anchor's entry is where it was. */
  keep(anchor) {
    if (!anchor) return;
    const n = this.nodes.get(anchor.index);
    if (!n || !n.isConnected) return;
    const dy = n.getBoundingClientRect().top - anchor.top;
    if (Math.abs(dy) > 1) window.scrollBy(0, dy);
  }

  /** Puts a new element before the first shown one with a greater index. */
  insert(idx, node) {
    const list = this.el;
    const last = list.lastElementChild;
    if (!last || idx > Number(last.dataset.index)) {
      list.appendChild(node);
      return;
    }
    const first = list.firstElementChild;
    if (idx < Number(first.dataset.index)) {
      list.insertBefore(node, first);
      return;
    }
    for (const child of list.children) {
      if (Number(child.dataset.index) > idx) {
        list.insertBefore(node, child);
        return;
      }
    }
    list.appendChild(node);
  }
}

/** The open <details> of a node, by their data-key, to keep them open across a re-render. */
function openKeys(node) {
  const keys = [];
  for (const d of node.querySelectorAll('details[data-key]')) if (d.open) keys.push(d.dataset.key);
  return keys;
}

function reopen(node, keys) {
  if (!keys.length) return;
  for (const d of node.querySelectorAll('details[data-key]')) if (keys.includes(d.dataset.key)) d.open = true;
}

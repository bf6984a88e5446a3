// The commit graph of the history page, drawn in each row's gutter: dots, lines and the
// connectors between lanes, placed with CSSOM writes (the CSP allows no inline style).

import { h } from './dom.js';

const LANE_W = 16;

/** The graph of `commits` (newest first), drawn a row at a time: gutter(i) is commit i's
 *  cell, gutter(i, true) the cell of a fork row shown above it. `more`: the history goes on
 *  below the last row. */
export function commitGraph(commits, more) {
  const n = commits.length;
  const idx = new Map();
  commits.forEach((c, i) => idx.set(c.commit_hash, i));

  // Lanes: 0 is the first-parent line; each merge's second-parent chain gets a lane,
  // reused once free.
  const laneOf = new Array(n).fill(null);
  commits.forEach((c, i) => {
    if (c.first_parent) laneOf[i] = 0;
  });
  const segments = []; // {start, end, lane, fromLane, toLane}
  const laneEnds = []; // lane -> last row it is busy to
  commits.forEach((c, m) => {
    const parents = Array.isArray(c.parents) ? c.parents : [];
    if (parents.length < 2) return;
    const chain = [];
    let cur = parents[1];
    let base = null;
    let guard = 0;
    while (cur != null && guard++ < n + 1) {
      const j = idx.get(cur);
      if (j == null) break; // beyond the listed history
      if (laneOf[j] != null || j <= m) {
        base = j;
        break;
      }
      chain.push(j);
      const p = commits[j].parents;
      cur = Array.isArray(p) && p.length ? p[0] : null;
    }
    const last = chain.length ? Math.max(...chain) : m;
    const end = base != null ? Math.max(base, last) : n; // n: runs off the bottom
    let lane = 1;
    while (laneEnds[lane] != null && laneEnds[lane] >= m) lane++;
    laneEnds[lane] = end;
    for (const j of chain) laneOf[j] = lane;
    segments.push({ start: m, end, lane, fromLane: laneOf[m] ?? 0, toLane: base != null ? laneOf[base] ?? 0 : null });
  });
  // Anything left (should not happen): a side lane of its own.
  for (let i = 0; i < n; i++) if (laneOf[i] == null) laneOf[i] = 1;
  const maxLane = Math.max(1, ...laneOf, ...segments.map((s) => s.lane));
  const gutterW = (maxLane + 1) * LANE_W + 8;
  const x = (lane) => lane * LANE_W + LANE_W / 2;

  const line = (lane, kind) => {
    const el = h('span', { class: 'g-line g-' + kind + (lane > 0 ? ' g-lane-side' : '') });
    el.style.left = x(lane) - 1 + 'px';
    return el;
  };
  const conn = (a, b) => {
    const el = h('span', { class: 'g-conn' });
    el.style.left = x(Math.min(a, b)) + 'px';
    el.style.width = Math.abs(x(a) - x(b)) + 'px';
    return el;
  };

  return (i, extraFork) => {
    const g = h('div', { class: 'graph', 'aria-hidden': 'true' });
    g.style.width = gutterW + 'px';
    // main line
    if (extraFork) g.appendChild(line(0, 'full'));
    else {
      const top = i > 0;
      const bottom = i < n - 1 || more;
      if (top && bottom) g.appendChild(line(0, 'full'));
      else if (top) g.appendChild(line(0, 'top'));
      else if (bottom) g.appendChild(line(0, 'bottom'));
    }
    for (const s of segments) {
      if (extraFork) {
        if (i > s.start && i <= s.end) g.appendChild(line(s.lane, 'full'));
        continue;
      }
      if (i < s.start || i > s.end) continue;
      if (i === s.start) {
        g.appendChild(line(s.lane, s.end > i ? 'bottom' : 'none'));
        g.appendChild(conn(s.fromLane, s.lane));
      } else if (i === s.end && s.end < n) {
        g.appendChild(line(s.lane, 'top'));
        if (s.toLane != null && laneOf[i] !== s.lane) g.appendChild(conn(s.toLane, s.lane));
      } else {
        g.appendChild(line(s.lane, 'full'));
      }
    }
    if (extraFork) {
      const f = h('span', { class: 'g-fork' });
      f.style.left = x(0) + 'px';
      g.appendChild(f);
    } else {
      const c = commits[i];
      const isMerge = Array.isArray(c.parents) && c.parents.length > 1;
      const dot = h('span', { class: 'g-dot' + (isMerge ? ' g-merge' : '') + (c.first_parent ? '' : ' g-side') });
      dot.style.left = x(laneOf[i]) + 'px';
      g.appendChild(dot);
    }
    return g;
  };
}

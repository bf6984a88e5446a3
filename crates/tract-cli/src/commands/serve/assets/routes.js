// The page's addresses, the routes after `#`: built for links and parsed back to a page.
// A branch name is URI-encoded, since it may hold `/`.

export const sessionHref = (branch, at) =>
  '#/session/' + encodeURIComponent(branch) + (at != null ? '?at=' + encodeURIComponent(at) : '');
export const historyHref = (branch) => '#/history/' + encodeURIComponent(branch);
export const commitHref = (id) => '#/commit/' + encodeURIComponent(id);
export const diffHref = (a, b) =>
  '#/diff?a=' + encodeURIComponent(a) + (b ? '&b=' + encodeURIComponent(b) : '');

/** The page the hash names: { name, arg, params }, name 'unknown' (with raw) for no page. */
export function parseHash() {
  let raw = location.hash.replace(/^#/, '');
  let query = '';
  const q = raw.indexOf('?');
  if (q >= 0) {
    query = raw.slice(q + 1);
    raw = raw.slice(0, q);
  }
  const params = new URLSearchParams(query);
  if (raw === '' || raw === '/') return { name: 'sessions', params };
  if (raw === '/diff') return { name: 'diff', params };
  const m = raw.match(/^\/(session|history|commit)\/(.+)$/);
  if (!m) return { name: 'unknown', raw, params };
  let arg = m[2];
  try {
    arg = decodeURIComponent(arg);
  } catch (_) {
    /* keep it raw */
  }
  return { name: m[1], arg, params };
}

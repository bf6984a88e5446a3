// The client of the JSON API (docs/serve.md): one function per endpoint, so its paths and
// parameters are written here only. Every answer is a JSON object or an ApiError.

const enc = encodeURIComponent;

export const store = () => get('/api/store');
export const sessions = () => get('/api/sessions');
/** A page of the branch's view; no offset: the last page. */
export const view = (branch, offset, limit) =>
  get('/api/view?branch=' + enc(branch) + (offset != null ? '&offset=' + offset : '') + '&limit=' + limit);
export const history = (branch, limit) => get('/api/history?branch=' + enc(branch) + '&limit=' + limit);
export const commit = (id) => get('/api/commit/' + enc(id));
/** A page of a search's hits, best first: { hits, offset, more }. opts: history (every
 *  version), all (every branch), offset, limit. */
export const search = (branch, q, opts = {}) =>
  get(
    '/api/search?branch=' + enc(branch) + '&q=' + enc(q) +
      '&history=' + (opts.history ? 'true' : 'false') +
      (opts.all ? '&all=true' : '') +
      (opts.offset ? '&offset=' + enc(opts.offset) : '') +
      (opts.limit ? '&limit=' + enc(opts.limit) : '')
  );
/** What the branch's model requests cost (`tract usage --json`). */
export const usage = (branch) => get('/api/usage?branch=' + enc(branch));
/** How the views of revisions a and b differ, or (b null) what commit a did (`tract diff --json`). */
export const diff = (a, b) => get('/api/diff?a=' + enc(a) + (b ? '&b=' + enc(b) : ''));
/** The stream of the branch's `head` events. */
export const events = (branch) => new EventSource('/api/events?branch=' + enc(branch));

/** The largest page /api/view answers. */
export const MAX_LIMIT = 500;

/** The view's entries [from, to) (to == null: up to its end) in pages of at most MAX_LIMIT;
 *  `meta` is the last page, `consistent` whether every page had the same head. */
export async function viewRange(branch, from, to) {
  const out = [];
  let meta = null;
  const heads = new Set();
  let off = from;
  for (let guard = 0; guard < 50; guard++) {
    const lim = to == null ? MAX_LIMIT : Math.min(MAX_LIMIT, to - off);
    if (lim <= 0) break;
    const p = await view(branch, off, lim);
    meta = p;
    heads.add(p.head);
    const entries = Array.isArray(p.entries) ? p.entries : [];
    for (const e of entries) out.push(e);
    off += lim;
    const stop = to == null ? p.total : Math.min(to, p.total);
    if (off >= stop || entries.length === 0) break;
  }
  return { entries: out, meta, consistent: heads.size <= 1 };
}

/** A failed request: `code` is the API's error code, or `network`, `http_STATUS` or
 *  `bad_response` for an answer that is not the API's. */
export class ApiError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

/** GETs `path`: its JSON object, or an ApiError. */
async function get(path) {
  let res;
  try {
    res = await fetch(path, { headers: { Accept: 'application/json' }, cache: 'no-store' });
  } catch (e) {
    throw new ApiError(
      'network',
      'Cannot reach the tract server (' + ((e && e.message) || e) + '). Is `tract serve` still running?',
      0
    );
  }
  let text = '';
  try {
    text = await res.text();
  } catch (_) {
    text = '';
  }
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch (_) {
    body = null;
  }
  if (!res.ok || (body && typeof body === 'object' && body.error)) {
    const err = body && body.error;
    if (err && typeof err === 'object') {
      throw new ApiError(String(err.code || 'error'), String(err.message || 'error ' + res.status), res.status);
    }
    throw new ApiError(
      'http_' + res.status,
      'The server answered ' + res.status + ' ' + (res.statusText || '') + (text ? ': ' + text.slice(0, 300) : ''),
      res.status
    );
  }
  if (body == null || typeof body !== 'object') {
    throw new ApiError('bad_response', 'The server sent a response that is not a JSON object (' + path + ').', res.status);
  }
  return body;
}

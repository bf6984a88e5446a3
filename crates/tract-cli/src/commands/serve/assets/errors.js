// A failed request, shown in the page: its title, message and code.

import { h } from './dom.js';

const ERROR_TITLES = {
  not_found: 'Not found',
  bad_request: 'Bad request',
  corrupt: 'The store is corrupt',
  internal: 'Internal server error',
  network: 'Server unreachable',
};

/** `title` replaces the one the error's code gives. */
export function errorBox(err, title) {
  const code = (err && err.code) || 'error';
  const msg = (err && err.message) || String(err);
  return h(
    'div',
    { class: 'error', testid: 'error', role: 'alert' },
    h('strong', { class: 'error-title' }, title || ERROR_TITLES[code] || 'Error'),
    ' ',
    h('span', { class: 'error-msg' }, msg),
    code === 'corrupt' ? h('span', { class: 'error-hint' }, ' `tract fsck` tells more.') : null,
    ' ',
    h('code', { class: 'error-code' }, code)
  );
}

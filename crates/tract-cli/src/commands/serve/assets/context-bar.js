// The bar of how much of the model's context window a session's view fills. The store does
// not know the model, so the reader sets the window; it is remembered in this browser.

import { h } from './dom.js';
import { fmtInt } from './format.js';

const WINDOW_KEY = 'tract.contextWindow';
const DEFAULT_WINDOW = 200000;

function loadWindow() {
  try {
    const v = parseInt(localStorage.getItem(WINDOW_KEY), 10);
    if (Number.isFinite(v) && v > 0) return v;
  } catch (_) {
    /* storage may be disabled */
  }
  return DEFAULT_WINDOW;
}

function saveWindow(v) {
  try {
    localStorage.setItem(WINDOW_KEY, String(v));
  } catch (_) {
    /* ignore */
  }
}

/** The bar, and update() to show the tokens that tokens() returns (the view's, now). */
export function contextBar(tokens) {
  let ctxWindow = loadWindow();
  const ctxTokens = h('span', { class: 'ctx-tokens', testid: 'context-tokens' }, '0');
  const ctxPct = h('span', { class: 'ctx-pct' });
  const meterFill = h('div', { class: 'meter-fill' });
  const meter = h('div', { class: 'meter', role: 'progressbar', 'aria-label': 'Context used' }, meterFill);
  const winInput = h('input', {
    type: 'number',
    class: 'ctx-window',
    min: '1',
    step: '1000',
    'aria-label': 'Context window (tokens)',
    testid: 'context-window',
    title: 'Context window in tokens (remembered in this browser)',
  });
  winInput.value = String(ctxWindow);
  const bar = h(
    'div',
    { class: 'context-bar', testid: 'context-bar' },
    h('div', { class: 'ctx-line' }, h('span', { class: 'ctx-label' }, 'Context'), ctxTokens, h('span', { class: 'muted' }, ' / '), winInput, h('span', { class: 'muted' }, ' tokens'), ctxPct),
    meter
  );
  function update() {
    const t = tokens();
    ctxTokens.textContent = String(t || 0);
    ctxTokens.title = fmtInt(t) + ' tokens';
    const pct = ctxWindow > 0 ? ((t || 0) / ctxWindow) * 100 : 0;
    ctxPct.textContent = (pct < 10 ? pct.toFixed(1) : Math.round(pct)) + '%';
    meterFill.style.width = Math.min(100, Math.max(0, pct)).toFixed(2) + '%'; // CSSOM write: allowed by the CSP
    meter.setAttribute('aria-valuenow', String(Math.round(pct)));
    meter.setAttribute('aria-valuemin', '0');
    meter.setAttribute('aria-valuemax', '100');
    bar.classList.toggle('warn', pct >= 80 && pct < 100);
    bar.classList.toggle('over', pct >= 100);
  }
  winInput.addEventListener('change', () => {
    const v = parseInt(winInput.value, 10);
    if (Number.isFinite(v) && v > 0) {
      ctxWindow = v;
      saveWindow(v);
    } else {
      winInput.value = String(ctxWindow);
    }
    update();
  });
  winInput.addEventListener('input', () => {
    const v = parseInt(winInput.value, 10);
    if (Number.isFinite(v) && v > 0) {
      ctxWindow = v;
      saveWindow(v);
      update();
    }
  });
  return { el: bar, update };
}

// How numbers, sizes, durations, times and JSON text are shown.

import { h } from './dom.js';

export const shortId = (id) => (id ? String(id).slice(0, 10) : '');

export function fmtInt(n) {
  if (n == null || !Number.isFinite(Number(n))) return '–';
  return Math.round(Number(n)).toLocaleString('en-US');
}

export function humanBytes(n) {
  if (n == null || !Number.isFinite(Number(n))) return '–';
  n = Number(n);
  if (n < 1024) return n + ' B';
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return (v < 10 ? v.toFixed(1) : Math.round(v).toString()) + ' ' + units[i];
}

export function humanDuration(us) {
  if (us == null || !Number.isFinite(Number(us))) return '';
  us = Number(us);
  if (us < 1000) return Math.round(us) + ' µs';
  const ms = us / 1000;
  if (ms < 1000) return Math.round(ms) + ' ms';
  const s = ms / 1000;
  if (s < 59.95) return s.toFixed(1) + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' min ' + Math.floor(s - m * 60) + ' s';
  const hrs = Math.floor(m / 60);
  return hrs + ' h ' + (m - hrs * 60) + ' min';
}

function toDate(us, iso) {
  if (us != null && Number.isFinite(Number(us)) && Number(us) > 0) return new Date(Number(us) / 1000);
  if (iso) {
    const d = new Date(iso);
    if (!Number.isNaN(d.getTime())) return d;
  }
  return null;
}

function fmtDateTime(us, iso) {
  const d = toDate(us, iso);
  return d ? d.toLocaleString() : iso || '';
}

/** Clock time for today, else date and time. */
function fmtShort(us, iso) {
  const d = toDate(us, iso);
  if (!d) return iso || '';
  const now = new Date();
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  if (d.toDateString() === now.toDateString()) return time;
  return d.toLocaleDateString([], { year: 'numeric', month: 'short', day: 'numeric' }) + ' ' + time;
}

function fmtRelative(us, iso) {
  const d = toDate(us, iso);
  if (!d) return iso || '–';
  const s = (Date.now() - d.getTime()) / 1000;
  if (s < 0) return fmtShort(us, iso);
  if (s < 45) return 'just now';
  if (s < 90) return '1 min ago';
  if (s < 3600) return Math.round(s / 60) + ' min ago';
  if (s < 86400) return Math.round(s / 3600) + ' h ago';
  if (s < 86400 * 30) return Math.round(s / 86400) + ' d ago';
  return d.toLocaleDateString();
}

/** A <time>: relative ("3 min ago") or the clock time, the full date and time as its title. */
export function timeEl(us, iso, relative) {
  const d = toDate(us, iso);
  return h(
    'time',
    { class: 'time', datetime: d ? d.toISOString() : iso || '', title: fmtDateTime(us, iso) },
    relative ? fmtRelative(us, iso) : fmtShort(us, iso)
  );
}

/** Tool call arguments indented, or as they are when they are not JSON. */
export function prettyJsonText(s) {
  if (s == null) return '';
  if (typeof s !== 'string') return JSON.stringify(s, null, 2);
  try {
    return JSON.stringify(JSON.parse(s), null, 2);
  } catch (_) {
    return s;
  }
}

/** A commit's text as the view shows it: its newest edit's when it was edited. */
export function shownText(c) {
  const t = c.current_content != null ? c.current_content : c.content;
  return t == null ? '' : String(t);
}

/** A commit's tokens as the view counts them: its newest edit's when it was edited. */
export const shownTokens = (c) => (c.current_token_count != null ? c.current_token_count : c.token_count);

/** The agent whose session a branch holds, with its version: "codex 0.125.0", "gemini"; ''
 *  for a branch that holds no agent's session. */
export const agentLabel = (agent, version) => (agent ? String(agent) + (version ? ' ' + String(version) : '') : '');
export const plural = (n, one, many) => fmtInt(n) + ' ' + (Number(n) === 1 ? one : many || one + 's');

// Building the DOM. Every string that comes from the API is untrusted: it only ever reaches
// the page through textContent / createTextNode (`h`), and an href only ever holds a `#/...`
// route (routes.js builds them from ids and encoded branch names).

/** Creates an element. props: class, text, testid, dataset, href (#/ routes only),
 *  on<event> listeners, DOM properties (non-string values) or attributes (strings). */
export function h(tag, props, ...children) {
  const e = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v == null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = String(v);
      else if (k === 'testid') e.dataset.testid = v;
      else if (k === 'dataset') {
        for (const [dk, dv] of Object.entries(v)) if (dv != null) e.dataset[dk] = String(dv);
      } else if (k === 'href') e.setAttribute('href', safeHref(v));
      else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
      else if (k === 'style' || k.startsWith('on')) continue; // never: CSP and safety
      else if (typeof v !== 'string' && k in e) e[k] = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  add(e, children);
  return e;
}

function add(parent, children) {
  for (const c of children) {
    if (c == null || c === false) continue;
    if (Array.isArray(c)) add(parent, c);
    else if (c instanceof Node) parent.appendChild(c);
    else parent.appendChild(document.createTextNode(String(c)));
  }
  return parent;
}

/** Only in-app routes are ever put in an href. */
function safeHref(v) {
  const s = String(v);
  return s.startsWith('#/') ? s : '#/';
}

// Building the page: every text goes in through textContent or an
// attribute, never as HTML, so a model name, a system prompt or a model's
// answer holding markup shows as the characters it is.

// h builds an element: h('a.cls#id', {href, onclick, dataset…}, children…).
// Children are nodes or strings (added as text); null/false are skipped.
export function h(tag, attrs, ...children) {
  const [name, ...rest] = tag.split(/(?=[.#])/);
  const el = document.createElement(name || 'div');
  for (const r of rest) {
    if (r[0] === '.') el.classList.add(r.slice(1));
    else el.id = r.slice(1);
  }
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'class') el.className = v;
    else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'hidden') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// clear empties el and puts children in it.
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export function bytes(n) {
  if (n === undefined || n === null || isNaN(n)) return '–';
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (Math.abs(n) >= 1000 && i < u.length - 1) { n /= 1000; i++; }
  return (i ? n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0) : n) + ' ' + u[i];
}

export function duration(s) {
  if (!isFinite(s)) return '–';
  if (s < 1) return Math.round(s * 1000) + ' ms';
  if (s < 90) return s.toFixed(1) + ' s';
  if (s < 5400) return Math.round(s / 60) + ' min';
  return (s / 3600).toFixed(1) + ' h';
}

export function ago(date) {
  const t = new Date(date).getTime();
  if (!t || t < 0) return '–';
  const s = (Date.now() - t) / 1000;
  return s >= 0 ? duration(s) + ' ago' : 'in ' + duration(-s);
}

// confirmButton is a button that asks again in place (no window.confirm).
export function confirmButton(label, question, action, cls = 'danger') {
  const wrap = h('span.confirm');
  const first = h('button.' + cls, { type: 'button', onclick: () => {
    fill(wrap, h('span.muted', question + ' '),
      h('button.' + cls, { type: 'button', dataset: { confirm: 'yes' }, onclick: async () => { fill(wrap, h('span.muted', '…')); await action(); } }, 'Yes, ' + label.toLowerCase()),
      ' ', h('button.ghost', { type: 'button', onclick: () => fill(wrap, first) }, 'Cancel'));
  } }, label);
  return fill(wrap, first);
}

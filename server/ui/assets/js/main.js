// The console's shell: theme, key prompt, navigation between views.
import { h, fill } from './dom.js';
import * as api from './api.js';
import * as chat from './chat.js';
import * as models from './models.js';
import * as running from './running.js';
import * as jobs from './jobs.js';
import * as keys from './keys.js';

const views = { chat, models, running, jobs, keys };
export const session = { scope: 'none' };

// Any Content-Security-Policy violation is recorded (the browser tests
// read it: markup in a model's text must never even try to run).
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));

// Theme: the system's unless chosen; the choice is kept in local storage.
function applyTheme() {
  const t = localStorage.getItem('tadpole.theme');
  if (t) document.documentElement.dataset.theme = t;
  else delete document.documentElement.dataset.theme;
}
applyTheme();
document.getElementById('theme').addEventListener('click', () => {
  const dark = document.documentElement.dataset.theme
    ? document.documentElement.dataset.theme === 'dark'
    : matchMedia('(prefers-color-scheme: dark)').matches;
  localStorage.setItem('tadpole.theme', dark ? 'light' : 'dark');
  applyTheme();
});

const banner = document.getElementById('banner');
// showBanner shows a message over every view; retry, when given, adds a
// button.
export function showBanner(text, retry) {
  fill(banner, h('span', text), retry && h('button', { type: 'button', onclick: () => { hideBanner(); retry(); } }, 'Retry'),
    h('button.ghost', { type: 'button', onclick: hideBanner, title: 'Dismiss' }, '×'));
  banner.hidden = false;
}
export function hideBanner() { banner.hidden = true; }

let current = null;
let stopCurrent = null;

async function route() {
  const name = (location.hash.replace(/^#\/?/, '').split('/')[0]) || 'chat';
  const view = views[name] ? name : 'chat';
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === view);
  if (stopCurrent) stopCurrent();
  stopCurrent = null;
  current = view;
  const main = document.getElementById('view');
  main.dataset.view = view;
  if (session.scope === 'none') return askKey();
  if (views[view].adminOnly && session.scope === 'inference') {
    fill(main, h('div.pad', h('h2', 'Keys and usage'), h('p.error', 'This view needs an admin key; this key\'s scope is inference.')));
    return;
  }
  fill(main);
  try {
    stopCurrent = await views[view].show(main, session) || null;
  } catch (e) {
    failed(e, route);
  }
}

// failed reports an error of a view: a lost connection gets a retry.
export function failed(e, retry) {
  if (e instanceof api.ConnectionLost) showBanner('Connection lost: the server did not answer. Nothing is lost; retry when it is back.', retry);
  else if (!(e instanceof api.APIError && e.status === 401)) showBanner(e.message || String(e));
}

// askKey shows the key prompt: the server wants a key and has none or a
// bad one.
function askKey(message) {
  document.getElementById('signout').hidden = true;
  const input = h('input#key', { type: 'password', placeholder: 'API key', autocomplete: 'off', required: true, size: 40 });
  const err = h('p.error', message || '');
  const form = h('form.login', { onsubmit: async ev => {
    ev.preventDefault();
    api.setKey(input.value.trim());
    const ok = await whoami();
    if (!ok) {
      api.setKey('');
      if (ok === false) fill(err, 'The server refused this key.');
      return;
    }
    route();
  } },
  h('h2', 'This server needs an API key'),
  h('p.muted', 'The key is kept in this tab\'s session storage only and sent as a bearer token with each request. An admin key also manages models and shows keys and usage.'),
  input, ' ', h('button', { type: 'submit' }, 'Sign in'), err);
  fill(document.getElementById('view'), form);
  input.focus();
}

// whoami asks the server what the key may do and shows it; false when
// the server refuses it, null when it does not answer.
async function whoami() {
  try {
    session.scope = await api.scope();
  } catch (e) {
    failed(e, start);
    return null;
  }
  const who = document.getElementById('whoami');
  who.textContent = { open: 'no keys configured', admin: 'admin key', inference: 'inference key', none: '' }[session.scope];
  document.getElementById('signout').hidden = !api.key();
  document.body.dataset.scope = session.scope;
  for (const a of document.querySelectorAll('[data-admin]')) a.hidden = !(session.scope === 'admin' || session.scope === 'open');
  return session.scope !== 'none';
}

api.onAuthError(() => {
  if (session.scope !== 'none') {
    session.scope = 'none';
    api.setKey('');
    askKey('The server refused the key: sign in again.');
  }
});

document.getElementById('signout').addEventListener('click', () => {
  api.setKey('');
  session.scope = 'none';
  document.getElementById('whoami').textContent = '';
  askKey();
});

async function start() {
  const ok = await whoami();
  if (ok) route();
  else if (ok === false) askKey();
}

window.addEventListener('hashchange', route);
start();

// The console's only way to the server: its public API routes, with the
// key from session storage as a bearer token.

const KEY = 'tadpole.key';
// The server's root, relative to the page (/ui/ → /), so the console
// works behind a proxy that serves the server under a path.
export const base = new URL('..', location.href);

export function key() { return sessionStorage.getItem(KEY) || ''; }
export function setKey(k) { k ? sessionStorage.setItem(KEY, k) : sessionStorage.removeItem(KEY); }

export class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// ConnectionLost is a fetch that never got an answer (server down or
// restarting, network gone).
export class ConnectionLost extends Error {}

const listeners = new Set();
// onAuthError(fn): fn(status) runs when the server answers 401.
export function onAuthError(fn) { listeners.add(fn); }

export async function request(method, path, body, opts = {}) {
  const headers = {};
  if (key()) headers.Authorization = 'Bearer ' + key();
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(new URL(path.replace(/^\//, ''), base), {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      signal: opts.signal, cache: 'no-store',
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ConnectionLost('connection lost: the server did not answer (' + e.message + ')');
  }
  if (!res.ok) {
    const text = await res.text().catch(() => '');
    let msg = text;
    try {
      const j = JSON.parse(text);
      msg = typeof j.error === 'string' ? j.error : (j.error && j.error.message) || j.message || text;
    } catch { /* not JSON */ }
    if (res.status === 401) listeners.forEach(fn => fn(res.status));
    throw new APIError(res.status, msg || res.status + ' ' + res.statusText);
  }
  return res;
}

export async function json(method, path, body, opts) {
  const res = await request(method, path, body, opts);
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

export const get = (path, opts) => json('GET', path, undefined, opts);
export const post = (path, body, opts) => json('POST', path, body, opts);

// lines reads an NDJSON answer, calling onLine with each parsed object.
// An {"error": …} line is thrown.
export async function lines(res, onLine) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    let r;
    try {
      r = await reader.read();
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new ConnectionLost('connection lost mid-answer (' + e.message + ')');
    }
    if (r.done) break;
    buf += dec.decode(r.value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (!line) continue;
      const obj = JSON.parse(line);
      if (obj.error) throw new APIError(0, obj.error);
      onLine(obj);
    }
  }
  if (buf.trim()) {
    const obj = JSON.parse(buf);
    if (obj.error) throw new APIError(0, obj.error);
    onLine(obj);
  }
}

// scope asks the server what the key may do: "open" (no keys configured),
// "admin", "inference", or "none" (refused). It sends HEAD for a blob that
// does not exist, a model management route: 404 means the key may manage
// models, 403 that it is an inference key, 401 that it is refused.
export async function scope() {
  const headers = key() ? { Authorization: 'Bearer ' + key() } : {};
  const probe = new URL('api/blobs/sha256:' + '0'.repeat(64), base);
  let res;
  try {
    res = await fetch(probe, { method: 'HEAD', headers, cache: 'no-store' });
  } catch (e) {
    throw new ConnectionLost('connection lost: the server did not answer (' + e.message + ')');
  }
  if (res.status === 401) return 'none';
  if (res.status === 403) return 'inference';
  return key() ? 'admin' : 'open';
}

// Keys and usage (admin): each API key's requests, limited requests and
// tokens, from the counters /metrics exports by key id (the server keeps
// only hashes: no secret is ever shown). Sampled while the view is open.
import { h, fill } from './dom.js';
import * as api from './api.js';
import { parseMetrics } from './running.js';
import { failed } from './main.js';

export const adminOnly = true;
const seen = [];

export async function show(main, session) {
  const box = h('div#keys-usage');
  fill(main, h('div.pad', h('h2', 'Keys and usage'),
    h('p.muted', 'Keys are named by their id, the first 12 hex digits of the key\'s SHA-256; the server never keeps or shows a key itself. ' +
      'Create keys with "tadpole keys new [--scope admin]" and list them in --api-keys-file.'), box));
  let timer = null;
  let stopped = false;
  const tick = async () => {
    let ms;
    try {
      ms = parseMetrics(await (await api.request('GET', '/metrics')).text());
    } catch (e) {
      if (e instanceof api.APIError && e.status === 404) return fill(box, h('p.muted', 'No usage here: /metrics is not served on this listener (--metrics-host moves it).'));
      return failed(e, tick);
    }
    const keys = new Map();
    const of = id => keys.get(id) || keys.set(id, { id, requests: 0, limited: 0, in: 0, out: 0 }).get(id);
    for (const m of ms) {
      if (!m.labels.key) continue;
      if (m.name === 'tadpole_key_requests_total') of(m.labels.key).requests += m.value;
      else if (m.name === 'tadpole_key_rate_limited_total') of(m.labels.key).limited += m.value;
      else if (m.name === 'tadpole_key_tokens_total') of(m.labels.key)[m.labels.direction === 'in' ? 'in' : 'out'] += m.value;
    }
    seen.push({ t: Date.now(), keys });
    if (seen.length > 150) seen.shift();
    const first = seen[0];
    const rows = [...keys.values()].sort((a, b) => b.out - a.out);
    fill(box, session.scope === 'open' ? h('p.muted', 'No keys are configured on this server: every request is served without one.') : null,
      rows.length ? h('table#keys-table',
        h('thead', h('tr', ['Key id', 'Requests', 'Rate-limited', 'Tokens in', 'Tokens out', 'Tokens out since this page opened'].map(t => h('th', t)))),
        h('tbody', rows.map(k => h('tr', { dataset: { key: k.id } },
          h('td.mono', k.id), h('td', String(k.requests)), h('td', String(k.limited)), h('td', String(k.in)), h('td', String(k.out)),
          h('td', String(k.out - ((first.keys.get(k.id) || {}).out || 0)))))))
        : h('p.muted', 'No key has made a request yet.'));
    if (!stopped) timer = setTimeout(tick, 3000);
  };
  await tick();
  return () => { stopped = true; clearTimeout(timer); };
}

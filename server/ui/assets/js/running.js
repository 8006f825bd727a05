// Running: the loaded models (/api/ps: device, slots busy and idle, the
// queue, the prompt cache), unload; live charts read from /metrics.
import { h, fill, bytes, ago, duration } from './dom.js';
import * as api from './api.js';
import { failed } from './main.js';

// parseMetrics reads Prometheus' text format into [{name, labels, value}].
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = line.match(/^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    if (m[3]) for (const l of m[3].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: parseFloat(m[4]) });
  }
  return out;
}

const sum = (ms, name, pred = () => true) => ms.filter(m => m.name === name && pred(m.labels)).reduce((a, m) => a + m.value, 0);
const has = (ms, name) => ms.some(m => m.name === name);

// The charts' points, kept while the page is open (5 minutes at 2 s).
const history = [];
let prev = null;
const KEEP = 150;

export const charts = [
  { id: 'tps', title: 'Tokens/s generated', fmt: v => v.toFixed(1) },
  { id: 'ttft', title: 'Time to first token', fmt: v => duration(v) },
  { id: 'waiting', title: 'Requests waiting', fmt: v => String(Math.round(v)) },
  { id: 'running', title: 'Requests running', fmt: v => String(Math.round(v)) },
  { id: 'kv', title: 'KV cache in use', fmt: v => (100 * v).toFixed(0) + '%' },
  { id: 'gpu', title: 'GPU memory used', fmt: v => bytes(v) },
];

// sample reads /metrics once and adds a point.
export async function sample() {
  const text = await (await api.request('GET', '/metrics')).text();
  const ms = parseMetrics(text);
  const now = Date.now() / 1000;
  const cur = {
    t: now,
    out: sum(ms, 'tadpole_tokens_total', l => l.direction === 'out'),
    ttftSum: sum(ms, 'tadpole_time_to_first_token_seconds_sum'),
    ttftCount: sum(ms, 'tadpole_time_to_first_token_seconds_count'),
  };
  const p = { t: now, waiting: sum(ms, 'tadpole_requests_waiting'), running: sum(ms, 'tadpole_requests_running') };
  const kv = ms.filter(m => m.name === 'tadpole_kv_cache_usage_ratio').map(m => m.value);
  p.kv = kv.length ? Math.max(...kv) : 0;
  p.gpu = has(ms, 'tadpole_gpu_memory_used_bytes') ? sum(ms, 'tadpole_gpu_memory_used_bytes') : null;
  if (prev) {
    const dt = cur.t - prev.t;
    p.tps = dt > 0 ? Math.max(0, cur.out - prev.out) / dt : 0;
    const n = cur.ttftCount - prev.ttftCount;
    p.ttft = n > 0 ? (cur.ttftSum - prev.ttftSum) / n : (history.length ? history[history.length - 1].ttft : 0);
  } else {
    p.tps = 0;
    p.ttft = cur.ttftCount ? cur.ttftSum / cur.ttftCount : 0;
  }
  prev = cur;
  history.push(p);
  if (history.length > KEEP) history.shift();
  return ms;
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

// chart draws one series as a sparkline with its last value.
function chart(c) {
  const pts = history.filter(p => p[c.id] !== null && p[c.id] !== undefined);
  if (pts.length === 1) pts.unshift({ ...pts[0], t: pts[0].t - 2 }); // a flat line from the first point
  const W = 240, H = 60;
  const s = svg('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', class: 'spark', role: 'img', 'aria-label': c.title });
  if (pts.length > 1) {
    const max = Math.max(...pts.map(p => p[c.id]), c.id === 'kv' ? 1 : 1e-9);
    const t0 = pts[0].t, t1 = pts[pts.length - 1].t || t0 + 1;
    const xy = pts.map(p => `${((p.t - t0) / Math.max(1e-9, t1 - t0) * W).toFixed(1)},${(H - 2 - p[c.id] / max * (H - 6)).toFixed(1)}`);
    s.append(svg('polygon', { points: `0,${H} ${xy.join(' ')} ${W},${H}`, class: 'area' }));
    s.append(svg('polyline', { points: xy.join(' '), class: 'line' }));
  }
  const last = pts.length ? c.fmt(pts[pts.length - 1][c.id]) : (c.id === 'gpu' ? 'no GPU' : '–');
  return h('div.chart', { dataset: { chart: c.id } }, h('div.chart-head', h('span', c.title), h('strong', last)), s);
}

export async function show(main) {
  const ps = h('div#ps');
  const figs = h('div.charts#charts');
  fill(main, h('div.pad', h('h2', 'Running'), ps, h('h3', 'Live figures ', h('span.muted.small', '(from /metrics, every 2 s, the last 5 minutes)')), figs));
  let timer = null;
  let stopped = false;
  const tick = async () => {
    try {
      let ms = [];
      try {
        ms = await sample();
        fill(figs, charts.map(chart));
      } catch (e) {
        if (!(e instanceof api.APIError && e.status === 404)) throw e;
        fill(figs, h('p.muted', 'No live figures: /metrics is not served on this listener (--metrics-host moves it).'));
      }
      await renderPS(ps, ms);
    } catch (e) {
      failed(e);
      return;
    }
    if (!stopped) timer = setTimeout(tick, 2000);
  };
  await tick();
  return () => { stopped = true; clearTimeout(timer); };
}

async function renderPS(box, ms = []) {
  const data = await api.get('/api/ps');
  const models = data.models || [];
  if (!models.length) return fill(box, h('p.muted#ps-empty', 'No model is loaded. A request loads its model; Chat loads one when you send.'));
  const cache = models.map(m => m.tadpole && m.tadpole.prompt_cache).find(Boolean);
  fill(box,
    h('table#ps-table',
      h('thead', h('tr', ['Model', 'Device', 'Memory', 'Context', 'Slots busy', 'Queue', 'Loaded', 'Unloads', 'Draft', ''].map(t => h('th', t)))),
      h('tbody', models.map(m => {
        const x = m.tadpole || {};
        const busy = x.slots_busy ?? 0, total = x.slots_total ?? 0;
        const slots = h('div.slots', { title: busy + ' busy, ' + (total - busy) + ' idle' },
          Array.from({ length: total }, (_, i) => h('span.slot' + (i < busy ? '.busy' : ''))));
        const placement = x.placement && typeof x.placement === 'object' ? x.placement : null;
        return h('tr', { dataset: { model: m.name } },
          h('td', h('strong', m.name), h('div.muted.small', (m.details && m.details.family) || '')),
          h('td', x.processor || '–', placement && placement.reason ? h('div.muted.small', String(placement.reason)) : null),
          h('td', bytes(m.size), m.size_vram ? h('div.muted.small', bytes(m.size_vram) + ' on GPU') : null),
          h('td', String(m.context_length || '–')),
          h('td', h('span.slots-text', busy + ' / ' + total), slots),
          h('td', String(x.queue_depth ?? 0)),
          h('td', ago(x.loaded_at)),
          h('td', new Date(m.expires_at).getFullYear() > 2200 ? 'never' : ago(m.expires_at)),
          h('td', x.draft_model ? String(x.draft_model).split('/').pop() : '–'),
          h('td', h('button.ghost.unload', { type: 'button', onclick: async ev => {
            ev.target.disabled = true;
            try { await api.post('/api/generate', { model: m.name, keep_alive: 0 }); } catch (e) { failed(e); }
            renderPS(box, ms);
          } }, 'Unload')));
      }))),
    cache ? h('p.cache#prompt-cache', h('strong', 'Prompt cache: '),
      'RAM ' + bytes(cache.ram_bytes) + ' in ' + cache.ram_entries + ' entries · disk ' + bytes(cache.disk_bytes) + ' in ' + cache.disk_entries + ' entries',
      has(ms, 'tadpole_prompt_cache_hits_total') ? ' · ' + sum(ms, 'tadpole_prompt_cache_hits_total') + ' hits, ' + sum(ms, 'tadpole_prompt_cache_misses_total') +
        ' misses, ' + sum(ms, 'tadpole_prompt_cache_restored_tokens_total') + ' tokens restored' : '') : null);
}

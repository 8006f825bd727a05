// Jobs: Anura's durable jobs (/api/v1/jobs) with status, attempts and
// results, cancel; a background Response looked up by id.
import { h, fill, ago } from './dom.js';
import * as api from './api.js';
import { failed } from './main.js';

const STATES = ['queued', 'running', 'completed', 'failed', 'cancelled'];

export async function show(main) {
  const filter = h('select#job-status', { onchange: () => load() },
    h('option', { value: '' }, 'all'), STATES.map(s => h('option', { value: s }, s)));
  const list = h('div#jobs-list');
  const result = h('pre.result#job-result', { hidden: true });
  const respId = h('input#response-id', { placeholder: 'resp_…', size: 36 });
  const resp = h('div#response');
  fill(main, h('div.pad',
    h('h2', 'Jobs'),
    h('div.row', h('label.row', 'Status ', filter), h('button.ghost', { type: 'button', onclick: () => load() }, 'Refresh')),
    list, result,
    h('h3', 'Stored responses'),
    h('form.row', { onsubmit: ev => { ev.preventDefault(); lookup(respId.value.trim(), resp); } }, respId, h('button', { type: 'submit' }, 'Look up')),
    resp));
  let timer = null;
  let stopped = false;
  const load = async () => {
    clearTimeout(timer);
    const q = new URLSearchParams({ limit: '50' });
    if (filter.value) q.set('status', filter.value);
    let data;
    try {
      data = await api.get('/api/v1/jobs?' + q);
    } catch (e) {
      if (e instanceof api.APIError && e.status === 404) return fill(list, h('p.muted', 'Jobs are disabled on this server (no job store).'));
      return failed(e, load);
    }
    const jobs = (data.data && data.data.jobs) || [];
    fill(list, jobs.length ? h('table#jobs-table',
      h('thead', h('tr', ['Id', 'Type', 'Model', 'State', 'Attempts', 'Created', 'Finished', 'Error', ''].map(t => h('th', t)))),
      h('tbody', jobs.map(j => h('tr', { dataset: { job: j.id, state: j.state } },
        h('td.mono', j.id), h('td', j.type), h('td', j.model || '–'), h('td', h('span.badge.state-' + j.state, j.state)),
        h('td', String(j.attempts)), h('td', ago(j.created_at)), h('td', j.finished_at ? ago(j.finished_at) : '–'),
        h('td.error', j.error || ''),
        h('td.actions',
          j.state === 'completed' && j.results_url ? h('button.ghost', { type: 'button', onclick: () => results(j, result) }, 'Results') : null,
          j.state === 'queued' || j.state === 'running' ? h('button.ghost.danger', { type: 'button', onclick: async () => {
            try { await api.json('DELETE', '/api/v1/jobs/' + encodeURIComponent(j.id)); } catch (e) { failed(e); }
            load();
          } }, 'Cancel') : null)))))
      : h('p.muted', 'No jobs' + (filter.value ? ' ' + filter.value : '') + '.'));
    if (!stopped) timer = setTimeout(load, 3000);
  };
  await load();
  return () => { stopped = true; clearTimeout(timer); };
}

async function results(j, box) {
  try {
    const res = await api.request('GET', new URL(j.results_url, api.base).pathname);
    let text = await res.text();
    try { text = JSON.stringify(JSON.parse(text), null, 2); } catch { /* plain text (cowsay) */ }
    box.textContent = text;
    box.hidden = false;
  } catch (e) { failed(e); }
}

async function lookup(id, box) {
  if (!id) return;
  try {
    const r = await api.get('/v1/responses/' + encodeURIComponent(id));
    const text = (r.output || []).flatMap(o => (o.content || []).map(c => c.text || '')).join('');
    fill(box, h('p', h('span.badge.state-' + r.status, r.status), ' ', r.model || '', ' · ', ago((r.created_at || 0) * 1000)),
      r.error ? h('p.error', r.error.message || JSON.stringify(r.error)) : null,
      text ? h('pre.result', text) : null,
      r.status === 'queued' || r.status === 'in_progress' ? h('button.danger', { type: 'button', onclick: async () => {
        try { await api.post('/v1/responses/' + encodeURIComponent(id) + '/cancel', {}); } catch (e) { failed(e); }
        lookup(id, box);
      } }, 'Cancel') : null);
  } catch (e) {
    fill(box, h('p.error', e.message));
  }
}

// Models: the store's models with their details and capabilities; pull
// (with progress that survives a reload), create from a Modelfile, copy,
// delete.
import { h, fill, bytes, duration, ago, confirmButton } from './dom.js';
import * as api from './api.js';
import { failed, showBanner } from './main.js';

const infos = new Map();

// modelInfo is /api/show's answer for a model (kept for the session).
export async function modelInfo(name) {
  if (!infos.has(name)) infos.set(name, api.post('/api/show', { model: name }).catch(e => { infos.delete(name); throw e; }));
  return infos.get(name);
}

// listModels: the store's models and the names of the loaded ones.
export async function listModels() {
  const [tags, ps] = await Promise.all([api.get('/api/tags'), api.get('/api/ps')]);
  return { available: tags.models || [], loaded: new Set((ps.models || []).map(m => m.name)) };
}

function contextOf(info) {
  const mi = (info && info.model_info) || {};
  for (const [k, v] of Object.entries(mi)) if (k.endsWith('.context_length')) return v;
  return undefined;
}

const PULLS = 'tadpole.pulls';
let root = null;

export async function show(main, session) {
  root = main;
  const admin = session.scope === 'admin' || session.scope === 'open';
  const table = h('table.models#models-table');
  const pullName = h('input#pull-name', { placeholder: 'model to pull, e.g. llama3.2:1b or hf.co/user/repo:Q4_K_M', size: 48 });
  const insecure = h('input#pull-insecure', { type: 'checkbox' });
  const pulls = h('div#pulls');
  const mfName = h('input#create-name', { placeholder: 'new model name' });
  const mf = h('textarea#create-modelfile', { rows: 5, placeholder: 'FROM stories\nSYSTEM You are a storyteller.\nPARAMETER temperature 0.7' });
  const createOut = h('div.muted#create-status');
  fill(main, h('div.pad',
    h('h2', 'Models'),
    admin ? h('form.row', { onsubmit: ev => { ev.preventDefault(); if (pullName.value.trim()) pull({ name: pullName.value.trim(), insecure: insecure.checked }, pulls, table); pullName.value = ''; } },
      pullName, h('button#pull', { type: 'submit' }, 'Pull'), h('label.row', insecure, ' plain HTTP registry (insecure)')) : h('p.muted', 'Pulling, creating, copying and deleting models needs an admin key.'),
    pulls,
    table,
    admin ? h('details.create', h('summary', 'Create a model from a Modelfile'),
      h('form', { onsubmit: ev => { ev.preventDefault(); create(mfName.value.trim(), mf.value, createOut, table); } },
        h('label', 'Name', mfName), h('label', 'Modelfile', mf), h('button', { type: 'submit' }, 'Create'), createOut)) : null));
  await refresh(table, admin);
  // Pulls that were running when the page was left go on (the server
  // resumes a pull's partial download).
  if (admin) for (const p of pending()) if (!document.getElementById('pull-' + cssId(p.name))) pull(p, pulls, table);
}

function cssId(name) { return name.replace(/[^\w-]/g, '_'); }

async function refresh(table, admin) {
  const { available, loaded } = await listModels();
  infos.clear();
  const rows = await Promise.all(available.map(async m => {
    let info = null;
    try { info = await modelInfo(m.name); } catch { /* shown without details */ }
    return { m, info };
  }));
  fill(table,
    h('thead', h('tr', ['Name', 'Size', 'Family', 'Parameters', 'Quantization', 'Context', 'Capabilities', 'Modified', ''].map(t => h('th', t)))),
    h('tbody', rows.map(({ m, info }) => {
      const d = m.details || {};
      const actions = h('td.actions');
      if (admin) {
        const dest = h('input.copy-dest', { placeholder: 'copy to…', size: 14 });
        actions.append(h('form.inline', { onsubmit: async ev => {
          ev.preventDefault();
          if (!dest.value.trim()) return;
          try { await api.post('/api/copy', { source: m.name, destination: dest.value.trim() }); refresh(table, admin); } catch (e) { failed(e); }
        } }, dest, h('button.ghost', { type: 'submit' }, 'Copy')), ' ',
        confirmButton('Delete', 'Delete ' + m.name + '?', async () => {
          try { await api.json('DELETE', '/api/delete', { model: m.name }); } catch (e) { failed(e); }
          refresh(table, admin);
        }));
      }
      const detail = info ? h('details.model-detail', h('summary', 'Modelfile'),
        info.system ? h('p', h('span.muted', 'System: '), h('span.model-system-text', info.system)) : null,
        h('pre', info.modelfile || '')) : null;
      return h('tr', { dataset: { model: m.name } },
        h('td', h('div.name', m.name, loaded.has(m.name) ? h('span.badge.loaded', 'loaded') : null), detail),
        h('td', bytes(m.size)), h('td', d.family || '–'), h('td', d.parameter_size || '–'), h('td', d.quantization_level || '–'),
        h('td', String(contextOf(info) ?? '–')),
        h('td', ((info && info.capabilities) || []).map(c => h('span.badge.cap-' + c, c))),
        h('td', ago(m.modified_at)), actions);
    })));
  if (!available.length) table.append(h('tr', h('td', { colspan: 9 }, h('span.muted', 'No models yet: pull one above.'))));
}

// pending are the pulls started and not finished: [{name, insecure}].
function pending() {
  try {
    const list = JSON.parse(localStorage.getItem(PULLS) || '[]');
    return Array.isArray(list) ? list.filter(p => p && typeof p.name === 'string') : [];
  } catch { return []; }
}

function rememberPull(p, on) {
  const list = pending().filter(x => x.name !== p.name);
  if (on) list.push({ name: p.name, insecure: !!p.insecure });
  localStorage.setItem(PULLS, JSON.stringify(list));
}

async function pull(spec, box, table) {
  const name = spec.name;
  rememberPull(spec, true);
  const bar = h('progress', { max: 1, value: 0 });
  const text = h('span.muted', 'starting…');
  const row = h('div.pull#pull-' + cssId(name), h('strong', name), ' ', bar, ' ', text);
  box.append(row);
  const started = performance.now();
  let firstBytes = null;
  try {
    const res = await api.request('POST', '/api/pull', { model: name, insecure: !!spec.insecure, stream: true });
    await api.lines(res, p => {
      if (p.total) {
        const done = p.completed || 0;
        if (firstBytes === null) firstBytes = { at: performance.now(), n: done };
        const secs = (performance.now() - firstBytes.at) / 1000;
        const rate = secs > 0.2 ? (done - firstBytes.n) / secs : 0;
        bar.max = p.total;
        bar.value = done;
        text.textContent = p.status + ': ' + bytes(done) + ' of ' + bytes(p.total) + ' (' + Math.floor(100 * done / p.total) + '%)' +
          (rate > 0 ? ', ' + bytes(rate) + '/s, ' + duration((p.total - done) / rate) + ' left' : '');
      } else {
        text.textContent = p.status;
      }
    });
    bar.max = 1;
    bar.value = 1;
    text.textContent = 'done in ' + duration((performance.now() - started) / 1000);
    row.dataset.state = 'done';
    rememberPull(spec, false);
    if (root && root.contains(table)) await refresh(table, true);
  } catch (e) {
    row.dataset.state = 'error';
    text.textContent = '';
    text.append(h('span.error', 'failed: ' + e.message));
    if (!(e instanceof api.ConnectionLost)) rememberPull(spec, false);
    else showBanner('Connection lost during the pull of ' + name + '; it resumes when you come back to Models.');
  }
}

async function create(name, modelfile, out, table) {
  if (!name || !modelfile.trim()) { out.textContent = 'A name and a Modelfile, please.'; return; }
  out.textContent = 'creating…';
  try {
    const res = await api.request('POST', '/api/create', { model: name, modelfile, stream: true });
    await api.lines(res, p => { out.textContent = p.status; });
    await refresh(table, true);
  } catch (e) {
    out.textContent = '';
    out.append(h('span.error', e.message));
  }
}

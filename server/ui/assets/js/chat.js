// Chat: a model picker, streamed answers from /api/chat (NDJSON) with the
// reasoning folded and live, stop, regenerate, edit and resend, images
// for vision models, per-message figures, conversations kept in local
// storage with export and import as JSON.
import { h, fill, duration } from './dom.js';
import * as api from './api.js';
import { render as markdown } from './markdown.js';
import { failed, showBanner } from './main.js';
import { modelInfo, listModels } from './models.js';

const STORE = 'tadpole.conversations';
const SETTINGS = 'tadpole.settings';

function load() {
  try { return JSON.parse(localStorage.getItem(STORE)) || []; } catch { return []; }
}
function save() {
  try {
    localStorage.setItem(STORE, JSON.stringify(state.convs));
  } catch (e) {
    showBanner('Could not keep the conversations in this browser\'s storage: ' + e.message + ' (export them, or delete old ones).');
  }
}
function settings() {
  let s = {};
  try { s = JSON.parse(localStorage.getItem(SETTINGS)) || {}; } catch { /* defaults */ }
  return { model: '', temperature: 0.8, num_predict: 512, think: true, ...s };
}
function saveSettings() { localStorage.setItem(SETTINGS, JSON.stringify(state.settings)); }

// The module's state outlives the view: an answer still streaming when
// another view is shown goes on and is stored when it ends.
const state = { convs: null, current: null, settings: {}, busy: null, images: [], info: null, els: {} };

function newConv() {
  const c = { id: crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random(), title: 'New chat', system: '',
    model: state.settings.model, created: new Date().toISOString(), messages: [] };
  state.convs.unshift(c);
  state.current = c;
  localStorage.setItem('tadpole.current', c.id);
  save();
  return c;
}

export async function show(main) {
  if (!state.convs) state.convs = load();
  state.settings = settings();
  state.current = state.convs.find(c => c.id === localStorage.getItem('tadpole.current')) || state.convs[0] || newConv();
  const e = state.els = {};
  e.list = h('ul.convs');
  e.messages = h('div.messages#messages', { 'aria-live': 'polite' });
  e.model = h('select#model', { onchange: () => pickModel(e.model.value) });
  e.caps = h('div.caps#caps');
  e.modelSystem = h('div.model-system#model-system');
  e.system = h('textarea#system', { rows: 4, placeholder: 'System prompt (empty: the model\'s own)', oninput: () => { state.current.system = e.system.value; save(); } });
  e.temperature = h('input#temperature', { type: 'number', min: 0, max: 2, step: 0.1, value: state.settings.temperature,
    oninput: () => { state.settings.temperature = parseFloat(e.temperature.value); saveSettings(); } });
  e.numPredict = h('input#num-predict', { type: 'number', min: -1, step: 1, value: state.settings.num_predict,
    oninput: () => { state.settings.num_predict = parseInt(e.numPredict.value, 10); saveSettings(); } });
  e.think = h('input#think', { type: 'checkbox', checked: state.settings.think, onchange: () => { state.settings.think = e.think.checked; saveSettings(); } });
  e.thinkRow = h('label.row', { hidden: true }, e.think, ' Think (reasoning models)');
  e.prompt = h('textarea#prompt', { rows: 3, placeholder: 'Message (Enter sends, Shift+Enter a new line)', onkeydown: ev => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); send(); }
  }, onpaste: paste });
  e.send = h('button#send', { type: 'button', hidden: !!state.busy, onclick: () => send() }, 'Send');
  e.stop = h('button#stop.danger', { type: 'button', hidden: !state.busy, onclick: stop }, 'Stop');
  e.file = h('input#attach-file', { type: 'file', accept: 'image/*', multiple: true, hidden: true, onchange: () => { addFiles(e.file.files); e.file.value = ''; } });
  e.attach = h('button#attach.ghost', { type: 'button', hidden: true, title: 'Attach images', onclick: () => e.file.click() }, '🖼 Attach');
  e.thumbs = h('div.thumbs#thumbs');
  e.importFile = h('input#import-file', { type: 'file', accept: 'application/json,.json', hidden: true, onchange: () => importConvs(e.importFile.files[0]) });

  fill(main, h('div.chat',
    h('aside.sidebar',
      h('button#new-chat', { type: 'button', onclick: () => { newConv(); renderAll(); } }, '+ New chat'),
      e.list,
      h('div.row.small', h('button.ghost#export', { type: 'button', onclick: exportConvs }, 'Export'),
        h('button.ghost#import', { type: 'button', onclick: () => e.importFile.click() }, 'Import'), e.importFile)),
    h('section.conversation', e.messages,
      h('div.composer', e.thumbs, e.prompt, h('div.row', e.attach, e.file, h('span.grow'), e.stop, e.send))),
    h('aside.settings',
      h('label', 'Model', e.model), e.caps, e.modelSystem,
      h('label', 'System prompt', e.system),
      h('div.two', h('label', 'Temperature', e.temperature), h('label', 'Max tokens', e.numPredict)),
      e.thinkRow)));
  renderAll();
  await fillModels();
  return () => { /* a stream keeps going in the background and is stored when done */ };
}

async function fillModels() {
  const e = state.els;
  const { available, loaded } = await listModels();
  const opt = m => h('option', { value: m.name }, m.name + (loaded.has(m.name) ? '  ● loaded' : ''));
  const loadedList = available.filter(m => loaded.has(m.name));
  const rest = available.filter(m => !loaded.has(m.name));
  fill(e.model,
    loadedList.length ? h('optgroup', { label: 'Loaded' }, loadedList.map(opt)) : null,
    rest.length ? h('optgroup', { label: 'Available' }, rest.map(opt)) : null);
  if (!available.length) fill(e.model, h('option', { value: '' }, 'no models: pull one in Models'));
  if (!performance.getEntriesByName('tadpole-chat-ready').length) performance.mark('tadpole-chat-ready'); // the models are listed
  const want = state.current.model || state.settings.model;
  if (available.some(m => m.name === want)) e.model.value = want;
  await pickModel(e.model.value, true);
}

async function pickModel(name, initial) {
  const e = state.els;
  state.settings.model = name;
  saveSettings();
  if (!initial || !state.current.model) { state.current.model = name; save(); }
  fill(e.caps);
  fill(e.modelSystem);
  state.info = null;
  if (!name) return;
  let info;
  try {
    info = await modelInfo(name);
  } catch (err) {
    return failed(err);
  }
  // A later pick may have answered first (modelInfo caches): a stale
  // answer must not overwrite its capabilities.
  if (state.settings.model !== name) return;
  state.info = info;
  const caps = state.info.capabilities || [];
  fill(e.caps, caps.map(c => h('span.badge.cap-' + c, c)));
  if (state.info.system) fill(e.modelSystem, h('span.muted', 'Model\'s system prompt: '), h('span.model-system-text', state.info.system));
  e.attach.hidden = !caps.includes('vision');
  e.thinkRow.hidden = !caps.includes('thinking');
  if (!caps.includes('vision')) { state.images = []; renderThumbs(); }
}

function renderAll() {
  const e = state.els;
  e.system.value = state.current.system || '';
  fill(e.list, state.convs.map(c => h('li', { class: c === state.current ? 'active' : undefined },
    h('a', { href: '#/chat', onclick: ev => { ev.preventDefault(); state.current = c; localStorage.setItem('tadpole.current', c.id); renderAll(); } }, c.title),
    h('button.ghost.x', { type: 'button', title: 'Delete this conversation', onclick: () => deleteConv(c) }, '×'))));
  fill(e.messages, state.current.messages.length ? state.current.messages.map((m, i) => messageEl(m, i))
    : h('p.muted.empty', 'Pick a model and send a message. Conversations stay in this browser.'));
  if (state.current.model && [...e.model.options].some(o => o.value === state.current.model) && e.model.value !== state.current.model) {
    e.model.value = state.current.model;
    pickModel(state.current.model, true);
  }
  e.messages.scrollTop = e.messages.scrollHeight;
}

function deleteConv(c) {
  state.convs = state.convs.filter(x => x !== c);
  if (state.current === c) state.current = state.convs[0] || newConv();
  save();
  renderAll();
}

function messageEl(m, i) {
  const el = h('div.msg.' + m.role, { dataset: { index: i } });
  updateMessage(el, m, i);
  return el;
}

// updateMessage redraws one message in place (every streamed chunk).
function updateMessage(el, m, i) {
  const streaming = state.busy && state.busy.message === m;
  el.dataset.state = streaming ? 'streaming' : m.error ? 'error' : m.stopped ? 'stopped' : 'done';
  el.dataset.chunks = m.chunks || 0;
  const parts = [h('div.who', m.role === 'user' ? 'You' : (m.model || 'assistant'))];
  if (m.thinking) {
    const d = h('details.thinking', h('summary', streaming && !m.content ? 'Thinking…' : 'Reasoning'), h('div.thinking-text', m.thinking));
    const old = el.querySelector('details.thinking');
    if (old && old.open) d.open = true;
    parts.push(d);
  }
  if (m.images && m.images.length) parts.push(h('div.thumbs', m.images.map(b => h('img', { src: 'data:image/png;base64,' + b, alt: 'attached image' }))));
  parts.push(h('div.content', m.role === 'assistant' ? markdown(m.content || '') : m.content));
  if (Array.isArray(m.tool_calls)) {
    parts.push(h('div.tool-calls', m.tool_calls.map(c => {
      const f = (c && c.function) || {};
      return h('div.tool-call', h('span.muted', 'tool call '), h('code', String(f.name || '?') + ' ' + JSON.stringify(f.arguments ?? {})));
    })));
  }
  if (streaming && !m.content && !m.thinking && !m.tool_calls) parts.push(h('div.muted.waiting', 'waiting for the first token…'));
  if (m.error) parts.push(h('div.error', m.error));
  if (m.stopped) parts.push(h('div.muted', 'stopped'));
  if (m.stats) parts.push(h('div.figures', figures(m.stats)));
  if (!streaming && !state.busy) {
    const acts = h('div.actions');
    const last = i === state.current.messages.length - 1;
    if (m.role === 'assistant' && last) acts.append(h('button.ghost.regenerate', { type: 'button', onclick: regenerate }, 'Regenerate'));
    if (m.role === 'user') acts.append(h('button.ghost.edit', { type: 'button', onclick: () => edit(i) }, 'Edit'));
    acts.append(h('button.ghost', { type: 'button', onclick: () => navigator.clipboard && navigator.clipboard.writeText(m.content) }, 'Copy'));
    parts.push(acts);
  }
  fill(el, parts);
}

function figures(stats) {
  const s = {};
  for (const [k, v] of Object.entries(stats)) if (typeof v === 'number' && isFinite(v)) s[k] = v;
  const out = [];
  if (s.eval_count !== undefined) out.push(s.eval_count + ' tokens');
  if (s.tps) out.push(s.tps.toFixed(1) + ' tok/s');
  if (s.ttft !== undefined) out.push('first token ' + duration(s.ttft));
  if (s.prompt_eval_count !== undefined) out.push('prompt ' + s.prompt_eval_count + ' tokens' + (s.prompt_tps ? ' at ' + s.prompt_tps.toFixed(0) + ' tok/s' : ''));
  if (s.load) out.push('load ' + duration(s.load));
  if (s.total !== undefined) out.push('total ' + duration(s.total));
  return out.join(' · ');
}

async function send(text) {
  const e = state.els;
  if (state.busy) return;
  const content = text ?? e.prompt.value;
  if (!content.trim() && !state.images.length) return;
  if (!e.model.value) return showBanner('Pick a model first (Models pulls one).');
  const c = state.current;
  const user = { role: 'user', content };
  if (state.images.length) user.images = state.images;
  state.images = [];
  renderThumbs();
  c.messages.push(user);
  if (c.title === 'New chat') c.title = content.trim().slice(0, 48) || 'Image';
  e.prompt.value = '';
  await run();
}

function regenerate() {
  const msgs = state.current.messages;
  if (msgs.length && msgs[msgs.length - 1].role === 'assistant') msgs.pop();
  run();
}

function edit(i) {
  const msgs = state.current.messages;
  const m = msgs[i];
  state.els.prompt.value = m.content;
  state.images = m.images || [];
  msgs.splice(i);
  save();
  renderAll();
  renderThumbs();
  state.els.prompt.focus();
}

// run streams the assistant's answer to the conversation as it stands.
async function run() {
  let e = state.els;
  const c = state.current;
  const model = e.model.value;
  c.model = model;
  const caps = (state.info && state.info.capabilities) || [];
  const history = c.messages.filter(m => !m.error || m.content).map(m => {
    const o = { role: m.role, content: m.content || '' };
    if (m.images) o.images = m.images;
    return o;
  });
  const messages = c.system ? [{ role: 'system', content: c.system }, ...history] : history;
  const body = { model, messages, stream: true, options: {} };
  const t = parseFloat(e.temperature.value);
  if (!isNaN(t)) body.options.temperature = t;
  const n = parseInt(e.numPredict.value, 10);
  if (!isNaN(n)) body.options.num_predict = n;
  if (caps.includes('thinking')) body.think = e.think.checked;
  const m = { role: 'assistant', model, content: '', thinking: '', chunks: 0 };
  c.messages.push(m);
  save();
  const ctl = new AbortController();
  state.busy = { message: m, ctl };
  e.send.hidden = true;
  e.stop.hidden = false;
  renderAll();
  const index = c.messages.length - 1;
  const started = performance.now();
  let first = 0;
  let pending = false;
  // redraw updates the message where it is shown now (the view may have
  // been left and shown again, or another conversation picked).
  const redraw = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const box = state.els.messages;
      const el = state.current === c && box && box.querySelector('.msg[data-index="' + index + '"]');
      if (!el) return;
      updateMessage(el, m, index);
      box.scrollTop = box.scrollHeight;
    });
  };
  try {
    const res = await api.request('POST', '/api/chat', body, { signal: ctl.signal });
    await api.lines(res, line => {
      const msg = line.message || {};
      if ((msg.content || msg.thinking) && !first) first = performance.now();
      m.content += msg.content || '';
      m.thinking += msg.thinking || '';
      if (Array.isArray(msg.tool_calls) && msg.tool_calls.length) m.tool_calls = [...(m.tool_calls || []), ...msg.tool_calls];
      m.chunks++;
      if (line.done) {
        m.stats = {
          eval_count: line.eval_count, prompt_eval_count: line.prompt_eval_count,
          tps: line.eval_duration ? line.eval_count / (line.eval_duration / 1e9) : undefined,
          prompt_tps: line.prompt_eval_duration ? line.prompt_eval_count / (line.prompt_eval_duration / 1e9) : undefined,
          ttft: first ? (first - started) / 1000 : undefined,
          load: line.load_duration ? line.load_duration / 1e9 : undefined,
          total: line.total_duration / 1e9, done_reason: line.done_reason,
        };
      }
      redraw();
    });
  } catch (err) {
    if (err.name === 'AbortError') {
      m.stopped = true;
      const secs = (performance.now() - (first || started)) / 1000;
      m.stats = { ttft: first ? (first - started) / 1000 : undefined, total: (performance.now() - started) / 1000,
        tps: first && m.chunks > 1 && secs > 0 ? (m.chunks - 1) / secs : undefined };
    } else if (err instanceof api.ConnectionLost) {
      m.error = 'Connection lost, retry: ' + err.message;
      showBanner('Connection lost: the answer was cut off. The conversation is kept; Regenerate when the server is back.', () => regenerate());
    } else {
      m.error = err.message;
      if (!(err instanceof api.APIError)) failed(err);
    }
  } finally {
    state.busy = null;
    e = state.els;
    e.send.hidden = false;
    e.stop.hidden = true;
    save();
    renderAll();
  }
}

function stop() {
  if (state.busy) state.busy.ctl.abort();
}

function paste(ev) {
  const files = [...(ev.clipboardData && ev.clipboardData.files || [])].filter(f => f.type.startsWith('image/'));
  if (!files.length) return;
  if (state.els.attach.hidden) return showBanner('This model does not take images (no vision capability).');
  ev.preventDefault();
  addFiles(files);
}

async function addFiles(files) {
  for (const f of files) {
    if (!f.type.startsWith('image/')) continue;
    const b64 = await new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
      r.onerror = () => reject(r.error);
      r.readAsDataURL(f);
    });
    state.images.push(b64);
  }
  renderThumbs();
}

function renderThumbs() {
  fill(state.els.thumbs, state.images.map((b, i) => h('span.thumb',
    h('img', { src: 'data:image/png;base64,' + b, alt: 'image to send' }),
    h('button.ghost.x', { type: 'button', title: 'Remove', onclick: () => { state.images.splice(i, 1); renderThumbs(); } }, '×'))));
}

function exportConvs() {
  const blob = new Blob([JSON.stringify({ tadpole_conversations: 1, exported: new Date().toISOString(), conversations: state.convs }, null, 2)], { type: 'application/json' });
  const a = h('a', { href: URL.createObjectURL(blob), download: 'tadpole-conversations.json' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

async function importConvs(file) {
  if (!file) return;
  try {
    const data = JSON.parse(await file.text());
    const list = Array.isArray(data) ? data : data.conversations;
    if (!Array.isArray(list)) throw new Error('no "conversations" list in the file');
    let added = 0;
    for (const c of list) {
      if (!c || typeof c !== 'object' || !Array.isArray(c.messages)) continue;
      const conv = { id: String(c.id || crypto.randomUUID()), title: String(c.title || 'Imported'), system: String(c.system || ''),
        model: String(c.model || ''), created: String(c.created || new Date().toISOString()),
        messages: c.messages.filter(m => m && (m.role === 'user' || m.role === 'assistant')).map(m => ({
          role: m.role, content: String(m.content || ''), thinking: m.thinking ? String(m.thinking) : undefined,
          images: Array.isArray(m.images) ? m.images.map(String) : undefined, model: m.model ? String(m.model) : undefined,
          tool_calls: Array.isArray(m.tool_calls) ? m.tool_calls : undefined,
          stats: m.stats && typeof m.stats === 'object' ? m.stats : undefined })) };
      state.convs = state.convs.filter(x => x.id !== conv.id);
      state.convs.push(conv);
      added++;
    }
    save();
    renderAll();
    showBanner('Imported ' + added + ' conversation' + (added === 1 ? '' : 's') + '.');
  } catch (e) {
    showBanner('Import failed: ' + e.message);
  } finally {
    state.els.importFile.value = '';
  }
}


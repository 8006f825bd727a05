// A small Markdown renderer that builds DOM nodes: text is only ever put
// in with text nodes, so nothing a model writes can become markup.
// Block level: fenced code, headings, lists, quotes, rules, paragraphs;
// inline: code, bold, italics, links (http, https and mailto only).
import { h } from './dom.js';

export function render(src) {
  const out = document.createDocumentFragment();
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) out.append(h('p', inline(para.join('\n'))));
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if ((m = line.match(/^\s*(```+|~~~+)\s*([\w+#.-]*)/))) {
      flush();
      const fence = m[1];
      const lang = m[2];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
      i++; // closing fence (or the end while it streams)
      out.append(codeBlock(body.join('\n'), lang));
      continue;
    }
    if ((m = line.match(/^(#{1,6})\s+(.*)$/))) {
      flush();
      out.append(h('h' + Math.min(6, m[1].length + 2), inline(m[2])));
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      out.append(h('hr'));
      i++;
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const q = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) q.push(lines[i++].replace(/^\s*>\s?/, ''));
      out.append(h('blockquote', render(q.join('\n'))));
      continue;
    }
    if ((m = line.match(/^\s*([-*+]|\d+[.)])\s+/))) {
      flush();
      const ordered = /\d/.test(m[1]);
      const list = h(ordered ? 'ol' : 'ul');
      while (i < lines.length && (m = lines[i].match(/^\s*([-*+]|\d+[.)])\s+(.*)$/)) && /\d/.test(m[1]) === ordered) {
        let item = m[2];
        i++;
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !/^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) item += '\n' + lines[i++].trim();
        list.append(h('li', inline(item)));
      }
      out.append(list);
      continue;
    }
    if (!line.trim()) {
      flush();
      i++;
      continue;
    }
    para.push(line);
    i++;
  }
  flush();
  return out;
}

// inline turns a span of text into nodes.
function inline(text) {
  const nodes = [];
  const re = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|(?<!\w)__([\s\S]+?)__(?!\w)|\*([^*\s][^*]*?)\*|(?<!\w)_([^_\s][^_]*?)_(?!\w)|\[([^\]]+)\]\(([^)\s]+)\)|\n/g;
  let last = 0;
  let m;
  while ((m = re.exec(text))) {
    if (m.index > last) nodes.push(text.slice(last, m.index));
    if (m[1]) nodes.push(h('code', m[2]));
    else if (m[3] !== undefined || m[4] !== undefined) nodes.push(h('strong', inline(m[3] ?? m[4])));
    else if (m[5] !== undefined || m[6] !== undefined) nodes.push(h('em', inline(m[5] ?? m[6])));
    else if (m[7] !== undefined) nodes.push(link(m[7], m[8]));
    else nodes.push(h('br'));
    last = re.lastIndex;
  }
  if (last < text.length) nodes.push(text.slice(last));
  return nodes;
}

function link(label, href) {
  let url;
  try { url = new URL(href); } catch { return '[' + label + '](' + href + ')'; }
  if (!['http:', 'https:', 'mailto:'].includes(url.protocol)) return '[' + label + '](' + href + ')';
  return h('a', { href: url.href, target: '_blank', rel: 'noopener noreferrer nofollow' }, label);
}

// Code highlighting: a tokenizer good enough for the usual languages
// (strings, comments, numbers, keywords), each token a span with a class.
const KEYWORDS = new Set(('break case catch class const continue def default defer do elif else enum export extends false ' +
  'finally fn for func function go if impl import in interface let loop match mut new nil none null package pass pub ' +
  'raise return self static struct switch this throw true try type typeof use var void while with yield async await ' +
  'from as not and or lambda select int string bool float char long unsigned public private protected None True False').split(' '));

function codeBlock(code, lang) {
  const el = h('code', { class: lang ? 'lang-' + lang : undefined });
  const re = /(\/\/[^\n]*|#(?!include)[^\n]*|\/\*[\s\S]*?\*\/|--[^\n]*)|("(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`[^`]*`?)|(\b\d[\d_.]*(?:e[+-]?\d+)?\b|\b0x[\da-f]+\b)|([A-Za-z_][\w]*)/gi;
  const hashComments = /^(py|python|sh|bash|shell|zsh|rb|ruby|yaml|yml|toml|r|perl|dockerfile|makefile)$/i.test(lang);
  const dashComments = /^(sql|lua|haskell|hs)$/i.test(lang);
  let last = 0;
  let m;
  while ((m = re.exec(code))) {
    if (m[1] && ((m[1][0] === '#' && !hashComments) || (m[1].startsWith('--') && !dashComments))) {
      re.lastIndex = m.index + 1;
      continue;
    }
    if (m.index > last) el.append(code.slice(last, m.index));
    const cls = m[1] ? 'tok-comment' : m[2] ? 'tok-string' : m[3] ? 'tok-number' : KEYWORDS.has(m[4]) ? 'tok-keyword' : null;
    el.append(cls ? h('span.' + cls, m[0]) : m[0]);
    last = re.lastIndex;
  }
  if (last < code.length) el.append(code.slice(last));
  const copy = h('button.ghost.copy', { type: 'button', onclick: () => navigator.clipboard && navigator.clipboard.writeText(code) }, 'Copy');
  return h('div.code', h('div.code-head', h('span.muted', lang || 'code'), copy), h('pre', el));
}

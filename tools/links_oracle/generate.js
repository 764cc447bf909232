// A seeded generator of hostile HTML documents for the links oracle
// (docs/LINKS.md): every call with the same seed yields the same documents.
//
// Each document is { name, url, contentType, body: Buffer }. Families:
//   soup    random concatenations of fragments that stress tree construction
//           (tables and foster parenting, formatting elements and the
//           adoption agency, raw text, foreign content, templates, noscript,
//           select, frameset, comments, unclosed tags) with links everywhere;
//   base    <base href> variants (first one wins, failure and data:/
//           javascript: fall back to the document URL, base in odd places);
//   href    href strings that exercise the URL parser: whitespace, control
//           characters (raw, as references, NUL), backslashes, IDN hosts,
//           percent escapes, entities, non-ASCII, odd schemes;
//   deep    deep nesting (to thousands of levels) with links at every depth;
//   attrs   elements with thousands of attributes (duplicate href: the first
//           wins);
//   charset BOMs, HTTP charsets, <meta> charsets, legacy bytes in hrefs,
//           invalid UTF-8, NUL bytes.
'use strict';

function mulberry32(seed) {
  let a = seed >>> 0;
  return function() {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Rng {
  constructor(seed) { this.next = mulberry32(seed); }
  int(n) { return Math.floor(this.next() * n); }
  range(lo, hi) { return lo + this.int(hi - lo + 1); }
  pick(arr) { return arr[this.int(arr.length)]; }
  chance(p) { return this.next() < p; }
}

const DOC_URLS = [
  'http://example.com/dir/page.html',
  'https://example.com/a/b/c?q=1#frag',
  'https://xn--bcher-kva.example/dir/',
  'http://127.0.0.1:8080/x/y.php?id=3',
  'https://user:pw@sub.example.org/path/to/file',
  'http://[::1]/ipv6/',
];

// Href strings a crawler meets, from tame to hostile. Written as JS strings:
// the generator escapes nothing, so quotes and '>' inside them matter.
const HREFS = [
  '/abs', 'rel', './rel2', '../up', '../../../../../top', '?q=1', '#frag',
  '', ' ', '//other.example/p', 'http://other.example/', 'https://secure.example/s',
  'HTTP://UPPER.EXAMPLE/UP', 'hTtPs://MiXeD.example', 'http:rel-with-scheme',
  'https:/one-slash', 'http:\\\\back.example\\slash', '\\\\host.example\\x',
  '/a\\b\\c', 'javascript:void(0)', 'JavaScript:alert(1)', 'mailto:a@b.example',
  'data:text/html,<a>', 'tel:+123', 'ftp://ftp.example/f', 'ws://ws.example/',
  'about:blank', 'file:///etc/passwd', 'http://', 'http://[::1', 'http://a b/',
  'http://exa mple.com/', 'http://ex%41mple.com/', 'http://ex%zzample.com/',
  'http://münchen.example/straße', 'http://例え.テスト/パス?検索=値#断片',
  'https://xn--n3h.example/', 'http://☃.example/', 'http://0x7f.1/',
  'http://127.1/', 'http://2130706433/', 'http://[0:0::1]:80/', 'http://h:99999/',
  'http://h:0080/', 'https://h:443/', 'http://u@h/', 'http://u:p@h/',
  '  /leading-space', '/trailing-space  ', '\t/tab-lead', '/in\tside',
  '/new\nline', '/cr\rhere', '/ff\fx', '/sp ace', '/pct%20ok', '/pct%zz',
  '/pct%', '/ü', '/%C3%BC', '/a?b=ü&c=d', '/a#ü', '/a?q=a+b%20c',
  '/dots/./x/../y', '/%2e%2E/z', '/a/..%2f', '.', '..', '/..',
  '/x\u0001y', '/x\u0007y', '/x\u001fy', '/x\u007fy', '\u0001/lead-ctl',
  '/trail-ctl\u0002', '/x\u0000nul', '/x\u0085nel', '/x\u00a0nbsp',
  '/x\u2028ls', '/x\ufeffbom', '/x\ud83d\ude00emoji', '/x\ufffdrep',
  '/amp&amp;x', '/lt&lt;x', '/quot&quot;x', '/copy&copy', '/copyx&copyx',
  '/notit&notit;', '/notin&notin;', '/reg&reg=1', '/num&#65;', '/hex&#x41;',
  '/ctl&#1;', '/nul&#0;', '/c1&#x80;', '/c1&#x9F;', '/big&#x110000;',
  '/sur&#xD800;', '/nonchar&#xFFFE;', '/nosemi&#65x', '/amp&ampx', '/&',
  '/a\'b', '/a`b', '/a<b', '/a>b', '/a"b', '/{x}', '/a|b', '/a^b',
  '?', '#', '?#', 'x:y', './x:y', '//', '///triple', 'https:', 'http://h/?',
  '/' + 'L'.repeat(300), 'page.html?utm=1&sid=abc;jsessionid=2',
];

const QUOTES = ['"', '\'', ''];

function attrText(rng, name, value) {
  let q = rng.pick(QUOTES);
  if (q === '' && /[\s>"'=<`]/.test(value)) q = value.includes('"') ? '\'' : '"';
  if (q === '"' && value.includes('"')) q = '\'';
  if (q === '\'' && value.includes('\'')) q = '"';
  if (value.includes('"') && value.includes('\'')) {
    value = value.replace(/"/g, '&quot;');
    q = '"';
  }
  if (q === '' && value === '') q = '"';
  return `${name}=${q}${value}${q}`;
}

function hrefAttr(rng, value) {
  const name = rng.pick(['href', 'href', 'href', 'HREF', 'Href']);
  const sep = rng.pick([' ', ' ', '\n', '\t', '/', ' \r\n ']);
  return sep + attrText(rng, name, value);
}

let linkCounter = 0;
function freshHref(rng) {
  linkCounter++;
  if (rng.chance(0.3)) return rng.pick(HREFS);
  const n = linkCounter;
  return rng.pick([`/l${n}`, `l${n}`, `../l${n}`, `?l=${n}`, `#l${n}`,
                   `http://h${n % 7}.example/l${n}`, `//p${n % 5}.example/${n}`]);
}

function anchor(rng) {
  const tag = rng.pick(['a', 'a', 'a', 'A', 'area']);
  let extra = '';
  if (rng.chance(0.2)) extra += ' rel=nofollow';
  if (rng.chance(0.1)) extra += hrefAttr(rng, freshHref(rng));  // duplicate
  if (rng.chance(0.05)) extra += ' xlink:href=/xl';
  const close = tag === 'area' ? '' : rng.chance(0.7) ? `text</${tag}>` : 'open ';
  return `<${tag}${hrefAttr(rng, freshHref(rng))}${extra}>${close}`;
}

// Fragments for the soup; functions are called for fresh content.
const SOUP = [
  (r) => anchor(r), (r) => anchor(r), (r) => anchor(r), (r) => anchor(r),
  () => '<a>no href</a>', () => '<a href>empty</a>', () => '<a href=>x</a>',
  () => '<p>', () => '</p>', () => '<div>', () => '</div>', () => '<span>',
  () => '</span>', () => '<b>', () => '</b>', () => '<i>', () => '</i>',
  () => '<em>', () => '</em>', () => '<font color=red>', () => '</font>',
  () => '<nobr>', () => '</nobr>', () => '<u>', () => '</u>', () => '</a>',
  () => '<table>', () => '</table>', () => '<tr>', () => '<td>', () => '</td>',
  () => '<th>', () => '<tbody>', () => '<caption>', () => '</caption>',
  () => '<colgroup><col>', () => '</tr>', () => '<thead>', () => '</tbody>',
  () => '<select>', () => '</select>', () => '<option>', () => '<optgroup>',
  () => '<svg>', () => '</svg>', () => '<math>', () => '</math>',
  () => '<foreignObject>', () => '</foreignObject>', () => '<desc>',
  () => '<mi>', () => '</mi>', () => '<annotation-xml encoding=text/html>',
  () => '<annotation-xml>', () => '<svg><a xlink:href=/svgxl href=/svgh>s</a></svg>',
  () => '<math><mtext><a href=/mtext>m</a></mtext></math>',
  () => '<svg><foreignObject><a href=/fo>f</a></foreignObject></svg>',
  () => '<svg><title><a href=/svgt>t</a></title></svg>',
  () => '<template>', () => '</template>',
  () => '<template><a href=/tpl>t</a></template>', () => '<noscript>',
  () => '</noscript>', () => '<noscript><a href=/ns>ns</a></noscript>',
  () => '<noscript><p><a href=/nsp>x</noscript>', () => '</noscript >',
  () => '<noscript/>', () => '</NOSCRIPT>', () => '</noscriptx>',
  () => '<textarea>', () => '</textarea>', () => '<title>', () => '</title>',
  () => '<script>', () => '</script>', () => '<style>', () => '</style>',
  () => '<xmp>', () => '</xmp>', () => '<iframe>', () => '</iframe>',
  () => '<noembed>', () => '</noembed>', () => '<noframes>', () => '</noframes>',
  () => '<plaintext>', () => '<!--', () => '-->', () => '<!-- c -->',
  () => '<!-->', () => '<!--->', () => '--!>', () => '<!-- <a href=/cm> -->',
  () => '<?php x ?>', () => '</ a>', () => '<![CDATA[', () => ']]>',
  () => '<!DOCTYPE html>', () => '<html>', () => '</html>', () => '<head>',
  () => '</head>', () => '<body>', () => '</body>', () => '<frameset>',
  () => '</frameset>', () => '<frame src=/fr>', () => '<form>', () => '</form>',
  () => '<button>', () => '</button>', () => '<li>', () => '<ul>', () => '<dd>',
  () => '<dt>', () => '<h1>', () => '</h2>', () => '<object>', () => '</object>',
  () => '<applet>', () => '<marquee>', () => '</marquee>', () => '<image>',
  () => '<isindex>', () => '<menuitem>', () => '<search>', () => '</search>',
  () => '<main>', () => '<ruby><rb>x<rt>y</ruby>', () => '<hr>', () => '<br/>',
  () => '</br>', () => '<img src=/img>', () => '<input>', () => '<keygen>',
  () => '<base href=/soupbase/>', () => '<base>', () => '<meta http-equiv=refresh content="0;url=/rf">',
  () => '<link rel=canonical href=/canon>', () => '<map><area href=/mp></map>',
  () => '<a href=/x<b>y</a>', () => '<a href="/unterminated', () => '<a href=/x',
  () => '<a', () => '<', () => '&', () => '&amp;', () => '&lt;a href=/esc&gt;',
  () => ' ', () => '\n', () => 'text', () => '\u0000', () => '\r\n',
  () => '<a href=/1><a href=/2>', () => '<p><a href=/pa>x</p>y',
  () => '<b><a href=/ba><p>q</b>r</a>', () => '<a href=/at><table><a href=/at2>',
  () => '<table><a href=/ta><tr><td><a href=/tb></td></tr></table>',
  () => '<table><tr><td>x</td></tr><a href=/tc>y</table>',
  () => '<table>x<a href=/td>y</a></table>', () => '<svg><a><circle/></a>',
  () => '<math><a href=/ma>m</a></math>', () => '<svg><desc><a href=/sd>d</a>',
  () => '<svg><p><a href=/sp>', () => '<svg><font color=1><a href=/sf>',
  () => '<select><a href=/sa>x</a></select>', () => '<select><svg><a href=/ss>',
  () => '<table><select><a href=/tsa></table>', () => '<template><table><a href=/tt>',
  () => '<frameset><a href=/fsa>', () => '<noscript><template><a href=/nt></noscript>',
  () => '<noscript><textarea></noscript><a href=/ntx></textarea>',
  () => '<textarea><a href=/inta></textarea>', () => '<title><a href=/ti></title>',
  () => '<iframe><a href=/if></iframe>', () => '<object><a href=/ob></object>',
  () => '<button><a href=/bt></button>', () => '<li><a href=/li1><li><a href=/li2>',
];

function soup(rng, n) {
  let s = rng.chance(0.5) ? '<!DOCTYPE html>' : '';
  for (let i = 0; i < n; i++) s += rng.pick(SOUP)(rng);
  return s;
}

const BASES = [
  '/basedir/', 'http://base.example/b/', 'https://base.example', 'sub/',
  '../../', '//proto.example/rel/', 'javascript:void(0)', 'JAVASCRIPT:x',
  ' javascript:x', 'data:text/html,x', 'DATA:,', 'mailto:x@example.com',
  'http://[::1', 'http://a b/', '', ' ', 'http://b\u0001ase.example/',
  'about:blank', 'ftp://ftp.example/dir/', 'blob:http://x/y', 'http:base-rel',
  'https://例え.テスト/', '\\\\back.example\\b\\', 'file:///tmp/', 'x:y',
  'http://b.example/?q#f', '#frag', '?query',
];

function baseDoc(rng) {
  const parts = [];
  const nbase = rng.range(1, 3);
  for (let i = 0; i < nbase; i++) {
    const kind = rng.int(6);
    if (kind === 0) parts.push('<base target=_top>');
    else if (kind === 1) parts.push(`<svg><base href=/svgbase/></svg>`);
    else if (kind === 2) parts.push(`<template><base href=/tplbase/></template>`);
    else parts.push(`<base${hrefAttr(rng, rng.pick(BASES))}>`);
  }
  const links = [];
  for (let i = 0; i < rng.range(1, 6); i++) links.push(anchor(rng));
  const where = rng.int(4);
  if (where === 0) return `<html><head>${parts.join('')}</head><body>${links.join('')}`;
  if (where === 1) return `${links.join('')}${parts.join('')}${anchor(rng)}`;
  if (where === 2) return `<noscript>${parts[0]}</noscript>${parts.slice(1).join('')}${links.join('')}`;
  return `<p>${links[0]}${parts.join('<p>')}${links.slice(1).join('')}`;
}

function hrefDoc(rng) {
  let s = '<!doctype html><body>';
  const n = rng.range(1, 12);
  for (let i = 0; i < n; i++) {
    let h = rng.pick(HREFS);
    if (rng.chance(0.3)) h = rng.pick(HREFS) + rng.pick(HREFS);
    if (rng.chance(0.2)) {
      const c = String.fromCharCode(rng.pick([0, 1, 8, 9, 10, 11, 12, 13, 27, 31, 127]));
      const at = rng.int(h.length + 1);
      h = h.slice(0, at) + c + h.slice(at);
    }
    s += `<${rng.pick(['a', 'area'])}${hrefAttr(rng, h)}>x</a>\n`;
  }
  return s;
}

const NESTERS = ['div', 'span', 'b', 'i', 'section', 'em', 'font', 'q', 'x-y',
                 'custom', 'blockquote', 'ul', 'li', 'p', 'table', 'td', 'a',
                 'svg', 'math', 'object', 'button', 'select', 'template'];

function deepDoc(rng) {
  const depth = rng.pick([100, 600, 1000, 2000, 4000]);
  const mix = rng.chance(0.5);
  const tag = rng.pick(NESTERS.slice(0, 11));
  const opens = [];
  let s = '<!doctype html><body><a href=/top>top</a>';
  for (let i = 0; i < depth; i++) {
    const t = mix ? rng.pick(NESTERS) : tag;
    opens.push(t);
    s += `<${t}>`;
    if (i % rng.pick([50, 97, 300]) === 0) s += `<a href=/d${i}>d</a>`;
  }
  s += '<a href=/bottom>b</a>';
  if (rng.chance(0.6)) {
    for (let i = opens.length - 1; i >= 0; i--) s += `</${opens[i]}>`;
  }
  s += '<a href=/after>after</a>';
  return s;
}

function attrsDoc(rng) {
  const count = rng.pick([100, 300, 1000]);
  let s = '<!doctype html><p>';
  const pos = rng.int(3);  // href first, middle or last
  let attrs = '';
  for (let i = 0; i < count; i++) {
    if ((pos === 0 && i === 0) || (pos === 1 && i === count >> 1)) {
      attrs += ' href=/first';
    }
    attrs += rng.chance(0.1) ? ' href=/dup' : ` data-a${i % (count >> 1)}=v${i}`;
  }
  if (pos === 2) attrs += ' href=/last';
  s += `<a${attrs}>x</a><a href=/next>n</a>`;
  if (count < 1000) s += `<div${attrs}><a href=/indiv>d</a></div>`;
  return s;
}

const ENCODINGS = [
  // [content type, meta, bytes for the non-ASCII part]
  ['text/html; charset=windows-1252', '', [0xE9, 0xFC, 0x80, 0x9F, 0xA0]],
  ['text/html; charset=ISO-8859-1', '', [0xE9, 0xFC, 0x85]],
  ['text/html', '<meta charset="windows-1252">', [0xE9, 0xFC, 0x93]],
  ['', '<meta http-equiv="Content-Type" content="text/html; charset=latin1">', [0xE9]],
  ['', '', [0xE9, 0xFC]],  // no label, invalid UTF-8: windows-1252
  ['', '', [0xC3, 0xA9, 0xE2, 0x82, 0xAC]],  // valid UTF-8
  ['text/html; charset=utf-8', '', [0xC3, 0x28, 0xE9, 0xF0, 0x9F, 0x98]],
  ['text/html; charset=shift_jis', '', [0x93, 0xFA, 0x96, 0x7B]],
  ['', '<meta charset=shift_jis>', [0x93, 0xFA, 0x96, 0x7B, 0x8C, 0xEA]],
  ['text/html; charset=euc-kr', '', [0xC7, 0xD1, 0xB1, 0xB9]],
  ['text/html; charset=gbk', '', [0xD6, 0xD0, 0xCE, 0xC4]],
  ['text/html; charset=koi8-r', '', [0xF0, 0xD2, 0xC9]],
  ['text/html; charset=bogus-label', '', [0xC3, 0xA9]],
  ['text/html; charset=bogus-label', '', [0xE9]],
  ['text/html; charset="utf-8"', '<meta charset=windows-1252>', [0xC3, 0xA9]],
  ['', '<!-- <meta charset=windows-1252> --><meta charset=utf-8>', [0xC3, 0xA9]],
];

function charsetDoc(rng) {
  const [ct, meta, high] = rng.pick(ENCODINGS);
  const chunks = [];
  const ascii = (s) => chunks.push(Buffer.from(s, 'latin1'));
  const bom = rng.int(8);
  if (bom === 0) chunks.push(Buffer.from([0xEF, 0xBB, 0xBF]));
  ascii(`<!doctype html><html><head>${meta}<title>t</title></head><body>`);
  const n = rng.range(1, 6);
  for (let i = 0; i < n; i++) {
    ascii(`<a href="/p${i}/`);
    chunks.push(Buffer.from(high.slice(0, rng.range(1, high.length))));
    ascii(rng.pick(['', '?q=', '#']));
    chunks.push(Buffer.from(high));
    ascii('">');
    chunks.push(Buffer.from(high));
    ascii('</a>');
    if (rng.chance(0.2)) chunks.push(Buffer.from([0]));
    if (rng.chance(0.2)) ascii(`<a href="http://h.example/${'\u0001'}x">c</a>`);
  }
  let body = Buffer.concat(chunks);
  if (bom === 1 || bom === 2) {
    // The same document in UTF-16 with a BOM (the BOM wins over the header).
    const text = body.toString('latin1');
    const le = Buffer.from(text, 'utf16le');
    if (bom === 1) {
      body = Buffer.concat([Buffer.from([0xFF, 0xFE]), le]);
    } else {
      const be = Buffer.from(le);
      be.swap16();
      body = Buffer.concat([Buffer.from([0xFE, 0xFF]), be]);
    }
  }
  return { ct, body };
}

function nulDoc(rng) {
  // NUL and other C0 bytes everywhere: text, tag names, attribute names and
  // values, comments.
  const pieces = ['<a href=/n\u0000ul>x</a>', '<a\u0000 href=/tagnul>x</a>',
    '<a h\u0000ref=/attrnul>x</a>', '\u0000\u0000text\u0000',
    '<!-- \u0000 --><a href=/aftercomment>', '<a href="\u0001\u0002/c">',
    '<di\u0000v><a href=/innul></di\u0000v>', '<a href=/ok\u000b>',
    '<svg>\u0000<a href=/svgnul>', '<table>\u0000<a href=/tnul></table>'];
  let s = '';
  for (let i = 0; i < rng.range(2, 8); i++) s += rng.pick(pieces);
  return s;
}

// All documents for a seed: `count` of them, families mixed.
function generate(seed, count) {
  const rng = new Rng(seed);
  linkCounter = 0;
  const docs = [];
  for (let i = 0; i < count; i++) {
    const url = rng.pick(DOC_URLS);
    const r = rng.int(1000) / 10;
    let family, ct = '', body;
    if (r < 45) {
      family = 'soup';
      body = Buffer.from(soup(rng, rng.range(3, 40)), 'utf8');
      if (rng.chance(0.2)) ct = 'text/html; charset=utf-8';
    } else if (r < 57) {
      family = 'base';
      body = Buffer.from(baseDoc(rng), 'utf8');
    } else if (r < 72) {
      family = 'href';
      body = Buffer.from(hrefDoc(rng), 'utf8');
      if (rng.chance(0.5)) ct = 'text/html; charset=utf-8';
    } else if (r < 73.5) {
      family = 'deep';
      body = Buffer.from(deepDoc(rng), 'utf8');
    } else if (r < 75) {
      family = 'attrs';
      body = Buffer.from(attrsDoc(rng), 'utf8');
    } else if (r < 92) {
      family = 'charset';
      ({ ct, body } = charsetDoc(rng));
    } else {
      family = 'nul';
      body = Buffer.from(nulDoc(rng), 'utf8');
      if (rng.chance(0.5)) ct = 'text/html';
    }
    docs.push({ name: `${family}-${i}`, url, contentType: ct, body });
  }
  return docs;
}

module.exports = { generate };

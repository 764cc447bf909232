#!/usr/bin/env node
// The links a browser finds in one HTML document, as the reference for
// crawld's parser (docs/LINKS.md). Independent of crawld's code:
//
//  1. bytes -> text: the HTML Standard's encoding sniffing (BOM, then the
//     transport-layer charset, then the <meta> prescan of the first 1024
//     bytes; html-encoding-sniffer) with crawld's documented default when
//     nothing is declared: UTF-8 if the bytes are valid UTF-8, else
//     windows-1252 (a browser guesses by locale); an HTTP charset label that
//     is unknown also means UTF-8. Decoding: whatwg-encoding (iconv-lite).
//  2. text -> tree: parse5 (WHATWG tree construction, scripting enabled, so
//     <noscript> is raw text as in a browser with JavaScript on).
//  3. tree -> links: every `a` and `area` element of the HTML namespace with
//     an href attribute, in tree order (what document.links lists; template
//     contents are not in the document), resolved with `new URL(href, base)`
//     where base is the frozen base URL of the first HTML `base` element with
//     an href (ignored when its URL fails to parse or is data:/javascript:),
//     else the document URL. Only http(s) results are printed.
//
// CLI: node oracle.js --base URL [--content-type CT] < page.html
'use strict';

const { parse } = require('parse5');
const sniff = require('html-encoding-sniffer');
const whatwgEncoding = require('whatwg-encoding');

const HTML_NS = 'http://www.w3.org/1999/xhtml';

function charsetParam(contentType) {
  // The charset parameter of a Content-Type value (RFC 9110 parameters,
  // quoted-string unquoted), or undefined.
  const m = /;\s*charset\s*=\s*("([^"]*)"?|[^;]*)/i.exec(contentType || '');
  if (!m) return undefined;
  const v = m[2] !== undefined ? m[2] : m[1];
  return v.trim();
}

function isValidUtf8(bytes) {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch (e) {
    return false;
  }
}

// Returns { encoding, text }.
function decode(bytes, contentType) {
  const label = charsetParam(contentType);
  const known = label !== undefined && label !== '' &&
      whatwgEncoding.labelToName(label) !== null;
  const unknownLabel = label !== undefined && label !== '' && !known;
  let body = bytes;
  // The BOM is looked at before anything else and removed.
  let def;
  if (unknownLabel) {
    def = 'UTF-8';
  } else {
    let rest = bytes;
    if (rest.length >= 3 && rest[0] === 0xEF && rest[1] === 0xBB &&
        rest[2] === 0xBF) {
      rest = rest.subarray(3);
    }
    def = isValidUtf8(rest) ? 'UTF-8' : 'windows-1252';
  }
  const encoding = sniff(body, {
    transportLayerEncodingLabel: known ? label : undefined,
    defaultEncoding: def,
  });
  // whatwg-encoding decodes with iconv-lite, whose single-byte tables are
  // the Encoding Standard's (Node's own TextDecoder decodes windows-1252 as
  // ISO-8859-1), and strips the BOM.
  let name = encoding;
  if (name === 'x-user-defined') name = 'windows-1252';
  const text = whatwgEncoding.decode(body, name);
  return { encoding: name, text };
}

function hrefOf(el) {
  for (const a of el.attrs) {
    if (a.name === 'href' && !a.prefix && !a.namespace) return a.value;
  }
  return undefined;
}

// The a/area hrefs and the first base href, in tree order, without
// recursion (documents may nest thousands of elements deep).
function collect(doc) {
  const hrefs = [];
  let baseHref;
  const stack = [doc];
  while (stack.length > 0) {
    const n = stack.pop();
    if (n.namespaceURI === HTML_NS) {
      if (n.nodeName === 'a' || n.nodeName === 'area') {
        const h = hrefOf(n);
        if (h !== undefined) hrefs.push(h);
      } else if (n.nodeName === 'base' && baseHref === undefined) {
        const h = hrefOf(n);
        if (h !== undefined) baseHref = h;
      }
    }
    const kids = n.childNodes;
    if (kids) {
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
    }
  }
  return { hrefs, baseHref };
}

function tryUrl(input, base) {
  try {
    return new URL(input, base);
  } catch (e) {
    return null;
  }
}

// The browser's http(s) links of one document.
// bytes: Buffer; contentType: string ('' for none); documentUrl: string.
function links(bytes, contentType, documentUrl) {
  const { encoding, text } = decode(bytes, contentType);
  const doc = parse(text);
  const { hrefs, baseHref } = collect(doc);
  let base = documentUrl;
  if (baseHref !== undefined) {
    const b = tryUrl(baseHref, documentUrl);
    if (b !== null && b.protocol !== 'data:' && b.protocol !== 'javascript:') {
      base = b.href;
    }
  }
  const out = [];
  for (const h of hrefs) {
    const u = tryUrl(h, base);
    if (u !== null && (u.protocol === 'http:' || u.protocol === 'https:')) {
      out.push(u.href);
    }
  }
  return { encoding, links: out };
}

module.exports = { links, decode };

if (require.main === module) {
  const args = process.argv.slice(2);
  let base;
  let ct = '';
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--base') base = args[++i];
    else if (args[i] === '--content-type') ct = args[++i];
    else {
      console.error(`unknown argument ${args[i]}`);
      process.exit(2);
    }
  }
  if (base === undefined) {
    console.error('usage: oracle.js --base URL [--content-type CT] < page');
    process.exit(2);
  }
  const bytes = require('fs').readFileSync(0);
  for (const l of links(bytes, ct, base).links) process.stdout.write(l + '\n');
}

#!/usr/bin/env node
// Regenerates tests/data/links/corpus.jsonl: hostile HTML documents from the
// seeded generator (generate.js) with the links the oracle (oracle.js: parse5
// + WHATWG URL) finds in each. tests/unit/parser/links_corpus_test.cc replays
// them through crawld's parser, which must agree exactly.
//
// Refresh (from the repository root):
//   (cd tools/links_oracle && npm ci)
//   node tools/links_oracle/update-corpus.js > tests/data/links/corpus.jsonl
//
// One JSON object per line: {"name", "url", "content_type", the body as
// "text" (when it is valid UTF-8) or "base64" (when not), "encoding" (the oracle's, for diagnostics), "links" (http(s) URLs in
// document order)}.
'use strict';

const { generate } = require('./generate');
const { links } = require('./oracle');
const { isUtf8 } = require('node:buffer');

const SEED = Number(process.env.SEED || 20261126);
const COUNT = Number(process.env.COUNT || 5000);

for (const doc of generate(SEED, COUNT)) {
  const r = links(doc.body, doc.contentType, doc.url);
  process.stdout.write(JSON.stringify({
    name: doc.name,
    url: doc.url,
    content_type: doc.contentType,
    ...(isUtf8(doc.body) ? { text: doc.body.toString('utf8') }
                         : { base64: doc.body.toString('base64') }),
    encoding: r.encoding,
    links: r.links,
  }) + '\n');
}

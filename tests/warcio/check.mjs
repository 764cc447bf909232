// Reads WARC files with warcio.js (webrecorder's reader, independent of
// crawld's own) and checks every record: the WARC headers a reader needs,
// WARC-Block-Digest over the block and WARC-Payload-Digest over the HTTP
// payload as read, the HTTP message parsed by warcio for request, response
// and revisit records, and each revisit's reference (profile, refers-to
// record among the files given, same payload digest).
//
// usage: node check.mjs FILE.warc.gz...   (all files of a crawl, and of the
// earlier crawls it refers to)
// Prints one JSON object (records by type, problems) and exits 1 when any
// record has a problem, 2 on bad usage.
import { createReadStream } from "node:fs";
import { createHash } from "node:crypto";
import { WARCParser } from "warcio";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node check.mjs FILE.warc.gz...");
  process.exit(2);
}

// RFC 4648 base32, as WARC digests are written ("sha1:<BASE32>").
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
function base32(bytes) {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  while (out.length % 8 !== 0) out += "=";
  return out;
}
const sha1 = (bytes) => "sha1:" + base32(createHash("sha1").update(bytes).digest());
// Digests compare without padding and case (both are in use).
const norm = (d) => (d || "").replace(/=+$/, "").toUpperCase();

function concat(chunks) {
  return Buffer.concat(chunks.map((c) => Buffer.from(c)));
}

const HTTP_TYPES = new Set(["request", "response", "revisit"]);
const PROFILES = new Set([
  "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
  "http://netpreserve.org/warc/1.1/revisit/server-not-modified",
  "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
  "http://netpreserve.org/warc/1.0/revisit/server-not-modified",
]);

const counts = {};
const problems = [];
const byId = new Map(); // WARC-Record-ID -> {type, uri, payloadDigest}
const revisits = [];
let records = 0;

function problem(file, offset, id, what) {
  problems.push({ file, offset, id, what });
}

for (const file of files) {
  // Pass 1: the raw block (no HTTP parsing), for the digests.
  const raw = new WARCParser(createReadStream(file), { parseHttp: false });
  for await (const record of raw) {
    const h = record.warcHeaders.headers;
    const type = h.get("WARC-Type");
    const id = h.get("WARC-Record-ID");
    const offset = raw.offset;
    records++;
    counts[type] = (counts[type] || 0) + 1;
    for (const name of ["WARC-Record-ID", "WARC-Date", "Content-Length"]) {
      if (!h.get(name)) problem(file, offset, id, `no ${name}`);
    }
    if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/.test(h.get("WARC-Date") || "")) {
      problem(file, offset, id, `WARC-Date not W3C-ISO8601: ${h.get("WARC-Date")}`);
    }
    const block = concat([await record.readFully(false)]);
    if (block.length !== Number(h.get("Content-Length"))) {
      problem(file, offset, id, `block ${block.length} bytes, Content-Length ${h.get("Content-Length")}`);
    }
    const blockDigest = h.get("WARC-Block-Digest");
    if (blockDigest && norm(sha1(block)) !== norm(blockDigest)) {
      problem(file, offset, id, `WARC-Block-Digest ${blockDigest} != ${sha1(block)}`);
    }
    let payloadDigest = h.get("WARC-Payload-Digest");
    if (type === "response" && h.get("Content-Type")?.startsWith("application/http")) {
      const end = block.indexOf("\r\n\r\n");
      if (end < 0) {
        problem(file, offset, id, "no end of HTTP headers");
      } else if (payloadDigest) {
        const payload = block.subarray(end + 4);
        if (norm(sha1(payload)) !== norm(payloadDigest)) {
          problem(file, offset, id, `WARC-Payload-Digest ${payloadDigest} != ${sha1(payload)}`);
        }
      }
    }
    if (id) {
      if (byId.has(id)) problem(file, offset, id, "WARC-Record-ID twice");
      byId.set(id, { type, uri: h.get("WARC-Target-URI"), payloadDigest });
    }
    if (type === "revisit") {
      revisits.push({
        file,
        offset,
        id,
        profile: h.get("WARC-Profile"),
        refersTo: h.get("WARC-Refers-To"),
        refersToUri: h.get("WARC-Refers-To-Target-URI"),
        refersToDate: h.get("WARC-Refers-To-Date"),
        payloadDigest,
      });
    }
  }
  // Pass 2: as a replay tool reads it, HTTP messages parsed by warcio.
  const parsed = new WARCParser(createReadStream(file));
  for await (const record of parsed) {
    const h = record.warcHeaders.headers;
    const type = h.get("WARC-Type");
    if (HTTP_TYPES.has(type) && h.get("Content-Type")?.startsWith("application/http")) {
      const http = record.httpHeaders;
      if (!http) {
        problem(file, parsed.offset, h.get("WARC-Record-ID"), "warcio parsed no HTTP message");
      } else if (type !== "request" && !(http.statusCode >= 100 && http.statusCode <= 599)) {
        problem(file, parsed.offset, h.get("WARC-Record-ID"), `HTTP status ${http.statusCode}`);
      }
    }
    await record.readFully(false);
  }
}

for (const r of revisits) {
  if (!PROFILES.has(r.profile)) {
    problem(r.file, r.offset, r.id, `revisit profile ${r.profile}`);
  }
  if (!r.payloadDigest) problem(r.file, r.offset, r.id, "revisit without WARC-Payload-Digest");
  if (!r.refersToUri || !r.refersToDate) {
    problem(r.file, r.offset, r.id, "revisit without WARC-Refers-To-Target-URI/-Date");
  }
  if (r.refersTo) {
    const target = byId.get(r.refersTo);
    if (!target) {
      problem(r.file, r.offset, r.id, `WARC-Refers-To ${r.refersTo} not in the files given`);
    } else {
      if (target.uri !== r.refersToUri) {
        problem(r.file, r.offset, r.id, `refers to ${target.uri}, says ${r.refersToUri}`);
      }
      if (norm(target.payloadDigest) !== norm(r.payloadDigest)) {
        problem(r.file, r.offset, r.id, "payload digest differs from the record it refers to");
      }
    }
  }
}

const profiles = {};
for (const r of revisits) profiles[r.profile] = (profiles[r.profile] || 0) + 1;
console.log(JSON.stringify({ files: files.length, records, counts, profiles, problems: problems.slice(0, 50), problem_count: problems.length }));
process.exit(problems.length === 0 ? 0 : 1);

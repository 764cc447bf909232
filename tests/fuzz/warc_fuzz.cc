// Fuzz target for the WARC reader and verifier (store/store.h).
//
// Invariants checked, beyond not crashing:
// 1. The reader never returns more records than there are input bytes, and
//    record ranges are increasing and inside the input (uncompressed input).
// 2. The same bytes read plain and wrapped in one gzip member give the same
//    records (blocks and field lists) and the same success or failure.
// 3. VerifyBytes counts exactly the records the reader returns.
// 4. For one input in eight, the input drives the writer (URL, heads, body):
//    either it refuses the record (InvalidArgument: a head that is not an
//    HTTP response head, or whose framing is invalid) and writes nothing,
//    or the file it writes verifies cleanly and gives the body back.
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "store/store.h"

namespace {

using crawld::store::Record;
using crawld::store::WarcReader;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "warc_fuzz invariant failed: %s\n", what);
    std::abort();
  }
}

std::string GzipMember(const std::string& in) {
  z_stream zs{};
  deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, in.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int ret = deflate(&zs, Z_FINISH);
  Check(ret == Z_STREAM_END, "zlib deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

struct ReadResult {
  std::vector<Record> records;
  bool ok = true;
};

ReadResult ReadAll(std::string data, crawld::store::ReaderOptions opt) {
  ReadResult r;
  auto reader = WarcReader::FromString(std::move(data), opt);
  Record rec;
  for (;;) {
    auto more = reader->Next(&rec);
    if (!more.ok()) {
      r.ok = false;
      break;
    }
    if (!*more) break;
    r.records.push_back(std::move(rec));
  }
  return r;
}

// One scratch directory per process, removed at exit.
const std::string& ScratchDir() {
  static const std::string* dir = [] {
    char tmpl[] = "/tmp/warc_fuzz-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    Check(d != nullptr, "mkdtemp");
    auto* s = new std::string(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(ScratchDir(), ec);
    });
    return s;
  }();
  return *dir;
}

void RoundTrip(const uint8_t* data, size_t size) {
  const std::string& dir = ScratchDir();
  std::string in(reinterpret_cast<const char*>(data), size);
  size_t cut = size / 3;
  std::string uri = "http://fuzz.test/";
  for (char c : in.substr(0, std::min<size_t>(cut, 64)))
    if (c > 32 && c < 127) uri.push_back(c);
  crawld::store::Options o;
  o.dir = dir;
  o.fsync_on_rotate = false;
  o.fsync_on_flush = false;
  o.gzip_level = 1;
  auto w = crawld::store::WarcWriter::Open(o);
  Check(w.ok(), "writer open");
  crawld::DocBuffer body;
  Check(body.Append(in.substr(cut)).ok(), "body append");
  crawld::store::FetchRecord fr;
  fr.target_uri = uri;
  fr.ip = "127.0.0.1";
  fr.fetch_time_us = static_cast<int64_t>(size) * 1000003;
  fr.request_head = "GET / HTTP/1.1\r\nHost: fuzz.test\r\n\r\n";
  // Sometimes a real status line, sometimes fuzz bytes as the head.
  fr.response_head =
      (size % 2 == 0) ? "HTTP/1.1 200 OK\r\n\r\n" : in.substr(0, cut);
  fr.body = &body;
  const uint64_t before = (*w)->current_offset();
  auto ex = (*w)->WriteExchange(fr);
  if (!ex.ok()) {
    Check(ex.status().code() == crawld::Status::Code::kInvalidArgument,
          "a refused record is InvalidArgument");
    Check(size % 2 == 1, "a real status line is never refused");
    Check((*w)->current_offset() == before, "a refused record writes nothing");
    const std::string path = dir + "/" + (*w)->current_file();
    Check((*w)->Close().ok(), "close");
    std::filesystem::remove(path);
    return;
  }
  Check((*w)->Close().ok(), "close");
  std::string path = dir + "/" + ex->response.file;
  auto report = crawld::store::VerifyFile(path);
  Check(report.ok() && report->ok(), "writer output verifies");
  Check(report->records == 3, "writer output has 3 records");
  auto reader = WarcReader::Open(path);
  Check(reader.ok(), "reopen");
  Record rec;
  Check((*reader)->Next(&rec).ok(), "read warcinfo");
  auto r = (*reader)->Next(&rec);
  Check(r.ok() && *r && rec.block == fr.response_head + in.substr(cut),
        "response block round trip");
  std::filesystem::remove(path);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  crawld::store::ReaderOptions opt;
  opt.max_block_bytes = 1 << 20;  // keep the fuzzer's memory small
  opt.max_header_bytes = 64 * 1024;
  std::string input(reinterpret_cast<const char*>(data), size);

  ReadResult plain = ReadAll(input, opt);
  Check(plain.records.size() <= size, "record count <= input size");
  const bool is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (!is_gzip) {
    uint64_t prev_end = 0;
    for (const Record& r : plain.records) {
      Check(r.offset == prev_end, "plain records are contiguous");
      Check(r.length > 0 && r.offset + r.length <= size, "record inside input");
      prev_end = r.offset + r.length;
    }
    // Invariant 2: one gzip member around the same bytes reads the same.
    ReadResult gz = ReadAll(GzipMember(input), opt);
    Check(gz.ok == plain.ok, "gzip and plain agree on success");
    Check(gz.records.size() == plain.records.size(),
          "gzip and plain agree on record count");
    for (size_t i = 0; i < gz.records.size(); ++i) {
      Check(gz.records[i].block == plain.records[i].block, "same block");
      Check(gz.records[i].fields == plain.records[i].fields, "same fields");
    }
  }

  auto report = crawld::store::VerifyBytes(input, "fuzz", opt);
  Check(report.records == plain.records.size(), "verify counts the records");
  Check(plain.ok || !report.ok(), "a read error is a defect");

  if (size > 0 && data[size - 1] % 8 == 0) RoundTrip(data, size);
  return 0;
}

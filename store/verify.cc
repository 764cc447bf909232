// VerifyFile / VerifyBytes and crash repair (TruncateToLastCompleteRecord).
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <unordered_set>

#include "base/ascii.h"
#include "store/store.h"
#include "store/warc_internal.h"

namespace crawld::store {

namespace {

using ascii::StartsWithIgnoreCase;

// The revisit profiles of WARC 1.0 and 1.1 (section 6.7).
bool IsIdenticalPayloadProfile(std::string_view p) {
  return p == "http://netpreserve.org/warc/1.1/revisit/"
              "identical-payload-digest" ||
         p ==
             "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest";
}
bool IsNotModifiedProfile(std::string_view p) {
  return p == "http://netpreserve.org/warc/1.1/revisit/server-not-modified" ||
         p == "http://netpreserve.org/warc/1.0/revisit/server-not-modified";
}

// Checks the HTTP message in the block of a response or revisit record
// (issue 19: a record must not misdescribe what arrived).
void CheckHttpResponseBlock(
    const Record& r, const std::string& type,
    const std::function<void(const std::string&)>& defect) {
  auto head = internal::HttpHeadLength(r.block, true);
  if (!head) {
    defect(type +
           " record whose block is not an HTTP response (no status "
           "line and header block)");
    return;
  }
  const internal::HeadFraming framing =
      internal::ParseHeadFraming(std::string_view(r.block).substr(0, *head));
  if (!framing.error.empty()) {
    defect(type +
           " record of a response with invalid framing: " + framing.error);
    return;
  }
  if (type != "response" || framing.bodyless || framing.transfer_coded ||
      !framing.content_length)
    return;
  const uint64_t payload = r.block.size() - *head;
  if (payload < *framing.content_length && r.Header("WARC-Truncated").empty()) {
    defect("response payload of " + std::to_string(payload) +
           " bytes is shorter than its Content-Length " +
           std::to_string(*framing.content_length) +
           " without WARC-Truncated (WARC 1.1 section 6.3.2)");
  }
}

// WARC 1.1 section 5.2: "<" uri ">", the uri having a scheme.
bool IsRecordId(std::string_view id) {
  return id.size() > 3 && id.front() == '<' && id.back() == '>' &&
         id.find(':') != std::string_view::npos &&
         id.find_first_of(" \t") == std::string_view::npos;
}

void CheckRecord(const Record& r, bool first,
                 std::unordered_set<std::string>* ids,
                 std::vector<std::pair<uint64_t, std::string>>* concurrent,
                 VerifyReport* report) {
  const std::string at = "offset " + std::to_string(r.offset) + ": ";
  auto defect = [&](const std::string& what) {
    report->defects.push_back(at + what);
  };
  if (r.version != "WARC/1.1" && r.version != "WARC/1.0")
    defect("unsupported version line '" + r.version.substr(0, 40) + "'");
  for (const char* field :
       {"WARC-Record-ID", "Content-Length", "WARC-Date", "WARC-Type"}) {
    if (r.headers.find(field) == r.headers.end())
      defect(std::string("missing mandatory field ") + field);
  }
  const std::string id = r.Header("WARC-Record-ID");
  if (!id.empty()) {
    if (!IsRecordId(id)) defect("malformed WARC-Record-ID '" + id + "'");
    if (!ids->insert(id).second) defect("duplicate WARC-Record-ID " + id);
  }
  const std::string date = r.Header("WARC-Date");
  if (!date.empty() && !internal::IsWarcDate(date))
    defect("malformed WARC-Date '" + date + "'");
  const std::string type = r.type();
  if (first && type != "warcinfo")
    defect("first record is '" + type + "', not warcinfo");
  if ((type == "response" || type == "request" || type == "revisit" ||
       type == "resource") &&
      r.Header("WARC-Target-URI").empty())
    defect(type + " record without WARC-Target-URI");
  if (type == "revisit" && r.Header("WARC-Profile").empty())
    defect("revisit record without WARC-Profile");
  const bool http_block =
      StartsWithIgnoreCase(r.Header("Content-Type"), "application/http");
  auto warn = [&](const std::string& what) {
    report->warnings.push_back(at + what);
  };
  if (http_block &&
      (type == "response" || (type == "revisit" && !r.block.empty())))
    CheckHttpResponseBlock(r, type, defect);
  if (type == "revisit") {
    const std::string profile = r.Header("WARC-Profile");
    if (IsIdenticalPayloadProfile(profile)) {
      if (r.Header("WARC-Payload-Digest").empty())
        defect(
            "identical-payload-digest revisit without WARC-Payload-Digest "
            "(WARC 1.1 section 6.7.2)");
      if (!r.block.empty() && r.Header("WARC-Truncated") != "length")
        warn(
            "identical-payload-digest revisit with a block but without "
            "WARC-Truncated: length (WARC 1.1 section 6.7.2)");
    } else if (!IsNotModifiedProfile(profile) && !profile.empty()) {
      warn("revisit with an unknown WARC-Profile '" + profile +
           "': its block cannot be interpreted");
    }
    const std::string refers_to = r.Header("WARC-Refers-To");
    if (!refers_to.empty() && !IsRecordId(refers_to))
      defect("malformed WARC-Refers-To '" + refers_to + "'");
    const std::string refers_date = r.Header("WARC-Refers-To-Date");
    if (!refers_date.empty() && !internal::IsWarcDate(refers_date))
      defect("malformed WARC-Refers-To-Date '" + refers_date + "'");
    if (refers_to.empty() && r.Header("WARC-Refers-To-Target-URI").empty())
      warn(
          "revisit naming neither WARC-Refers-To nor "
          "WARC-Refers-To-Target-URI: its original cannot be found");
  }

  const std::string block_digest = r.Header("WARC-Block-Digest");
  if (!block_digest.empty()) {
    auto match = internal::DigestMatches(block_digest, Sha1Digest(r.block));
    if (!match)
      report->warnings.push_back(at + "cannot check WARC-Block-Digest '" +
                                 block_digest + "'");
    else if (!*match)
      defect("WARC-Block-Digest mismatch (declared " + block_digest +
             ", computed " + Sha1Digest(r.block) + ")");
  }

  // A revisit's payload digest names the payload of the record it refers
  // to, which this block does not hold.
  const std::string payload_digest = r.Header("WARC-Payload-Digest");
  if (!payload_digest.empty() && type != "revisit") {
    std::string_view payload = r.block;
    bool judge = true;
    if (http_block) {
      auto head = internal::HttpHeadLength(r.block, type != "request");
      if (head) {
        payload.remove_prefix(*head);
      } else {
        report->warnings.push_back(
            at + "WARC-Payload-Digest on a block that is not parseable HTTP");
        judge = false;
      }
    }
    if (judge) {
      std::string computed = Sha1Digest(payload);
      auto match = internal::DigestMatches(payload_digest, computed);
      if (!match)
        report->warnings.push_back(at + "cannot check WARC-Payload-Digest '" +
                                   payload_digest + "'");
      else if (!*match)
        defect("WARC-Payload-Digest mismatch (declared " + payload_digest +
               ", computed " + computed + ")");
    }
  }
  for (const auto& [name, value] : r.fields) {
    if (ascii::EqualsIgnoreCase(name, "WARC-Concurrent-To"))
      concurrent->emplace_back(r.offset, value);
  }
}

VerifyReport Verify(WarcReader* reader, std::string name, Status* io_error) {
  VerifyReport report;
  report.file = std::move(name);
  std::unordered_set<std::string> ids;
  std::vector<std::pair<uint64_t, std::string>> concurrent;
  Record rec;
  for (;;) {
    auto more = reader->Next(&rec);
    if (!more.ok()) {
      if (more.status().code() == Status::Code::kIOError) {
        *io_error = more.status();
      } else {
        report.defects.push_back(more.status().message());
      }
      break;
    }
    if (!*more) break;
    CheckRecord(rec, report.records == 0, &ids, &concurrent, &report);
    ++report.records;
  }
  if (report.records == 0 && report.defects.empty())
    report.defects.push_back("offset 0: no records (empty file)");
  for (const auto& [offset, target] : concurrent) {
    if (ids.count(target) == 0)
      report.warnings.push_back("offset " + std::to_string(offset) +
                                ": WARC-Concurrent-To " + target +
                                " is not in this file");
  }
  return report;
}

}  // namespace

Result<VerifyReport> VerifyFile(const std::string& path,
                                const ReaderOptions& options) {
  auto reader = WarcReader::Open(path, options);
  if (!reader.ok()) return reader.status();
  Status io_error;
  VerifyReport report = Verify(reader->get(), path, &io_error);
  if (!io_error.ok()) return io_error;
  return report;
}

VerifyReport VerifyBytes(std::string data, std::string name,
                         const ReaderOptions& options) {
  auto reader = WarcReader::FromString(std::move(data), options);
  Status io_error;
  VerifyReport report = Verify(reader.get(), std::move(name), &io_error);
  if (!io_error.ok()) report.defects.push_back(io_error.message());
  return report;
}

Result<uint64_t> TruncateToLastCompleteRecord(const std::string& path) {
  // Blocks are not kept, but must still be read; lift the cap so that a
  // large valid record is not mistaken for damage.
  ReaderOptions options;
  options.max_block_bytes = UINT64_MAX;
  auto reader = WarcReader::Open(path, options);
  if (!reader.ok()) return reader.status();
  Record rec;
  for (;;) {
    auto more = (*reader)->Next(&rec);
    if (more.ok() && *more) continue;
    if (!more.ok() && more.status().code() != Status::Code::kCorruption)
      return more.status();
    break;
  }
  const uint64_t keep = (*reader)->end_of_last_record();
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Status::IOError("stat " + path + ": " + strerror(errno));
  if (static_cast<uint64_t>(st.st_size) == keep) return keep;
  if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0)
    return Status::IOError("truncate " + path + ": " + strerror(errno));
  return keep;
}

}  // namespace crawld::store

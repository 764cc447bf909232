// daemon/console_api.cc: see console_api.h.
#include "daemon/console_api.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/ascii.h"
#include "base/time.h"
#include "store/store.h"

namespace crawld::daemon {

// ---------------------------------------------------------------------------
// The host table

namespace {

// Sort key -> row member.
struct SortKey {
  std::string_view name;
  std::string_view member;
};
constexpr SortKey kSortKeys[] = {
    {"host", "host"},
    {"queued", "queued"},
    {"fetched", "fetched"},
    {"errors", "errors"},
    {"next_fetch", "next_fetch_in_ms"},
    {"credit", "credit"},
    {"delay", "crawl_delay_ms"},
    {"pages", "pages"},
};

const SortKey* FindSortKey(std::string_view name) {
  for (const SortKey& k : kSortKeys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string SortKeyList() {
  std::string out;
  for (const SortKey& k : kSortKeys) {
    if (!out.empty()) out += ", ";
    out += k.name;
  }
  return out;
}

// A strictly decimal number in [lo, hi]; false otherwise (sign, spaces,
// "0x", an empty string, overflow).
bool ParseDecimal(const std::string& s, uint64_t lo, uint64_t hi,
                  uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

double NumberOf(const Json& row, std::string_view member) {
  const Json* v = json::Find(row, member);
  return v != nullptr && v->is_number() ? v->get<double>() : 0.0;
}

std::string StringOf(const Json& row, std::string_view member) {
  const Json* v = json::Find(row, member);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace

const std::vector<std::string_view>& HostStateNames() {
  static const std::vector<std::string_view>* const kNames =
      new std::vector<std::string_view>{"active",      "ready", "waiting",
                                        "backing_off", "idle",  "retired"};
  return *kNames;
}

std::string_view HostStateName(const frontier::HostInfo& info, int64_t now_us) {
  if (info.retired) return "retired";
  if (info.in_flight) return "active";
  if (info.queued == 0) return "idle";
  if (info.consecutive_errors > 0) return "backing_off";
  const bool over_budget =
      info.page_budget > 0 && info.pages >= info.page_budget;
  if (over_budget || info.next_fetch_us > now_us) return "waiting";
  return "ready";
}

Result<HostQuery> ParseHostQuery(const QueryParams& params) {
  HostQuery query;
  bool seen_q = false, seen_state = false, seen_sort = false,
       seen_order = false, seen_limit = false;
  std::string order;
  auto once = [](bool* seen, const std::string& name) -> Status {
    if (*seen) {
      return Status::InvalidArgument("parameter '" + name +
                                     "' given more than once");
    }
    *seen = true;
    return Status::Ok();
  };
  for (const auto& [key, value] : params) {
    Status s;
    if (key == "q") {
      s = once(&seen_q, key);
      if (s.ok() && value.size() > kMaxHostQueryBytes) {
        s = Status::InvalidArgument("q must be at most " +
                                    std::to_string(kMaxHostQueryBytes) +
                                    " bytes");
      }
      query.q = ascii::ToLower(value);
    } else if (key == "state") {
      s = once(&seen_state, key);
      const auto& names = HostStateNames();
      if (s.ok() && !value.empty() &&
          std::find(names.begin(), names.end(), value) == names.end()) {
        s = Status::InvalidArgument(
            "state must be one of active, ready, waiting, backing_off, "
            "idle, retired");
      }
      query.state = value;
    } else if (key == "sort") {
      s = once(&seen_sort, key);
      if (s.ok() && FindSortKey(value) == nullptr) {
        s = Status::InvalidArgument("sort must be one of " + SortKeyList());
      }
      query.sort = value;
    } else if (key == "order") {
      s = once(&seen_order, key);
      if (s.ok() && value != "asc" && value != "desc") {
        s = Status::InvalidArgument("order must be asc or desc");
      }
      order = value;
    } else if (key == "limit") {
      s = once(&seen_limit, key);
      uint64_t v = 0;
      if (s.ok() && !ParseDecimal(value, 1, kMaxHostRows, &v)) {
        s = Status::InvalidArgument("limit must be 1 .. " +
                                    std::to_string(kMaxHostRows));
      }
      query.limit = static_cast<size_t>(v);
    } else {
      // A typo ("sort_by") silently ignored would look like a server bug.
      s = Status::InvalidArgument("unknown parameter '" + key.substr(0, 64) +
                                  "' (known: q, state, sort, order, limit)");
    }
    if (!s.ok()) return s;
  }
  query.descending = order.empty() ? query.sort != "host" : order == "desc";
  return query;
}

Json HostRow(std::string_view host_key, const frontier::HostInfo& info,
             std::string_view robots, int64_t now_us) {
  Json j = Json::object();
  j["host"] = std::string(host_key);
  j["state"] = std::string(HostStateName(info, now_us));
  j["queued"] = static_cast<uint64_t>(info.queued);
  j["in_flight"] = info.in_flight;
  j["fetched"] = info.fetched;
  j["pages"] = info.pages;
  j["errors"] = info.consecutive_errors;
  j["next_fetch_in_ms"] =
      std::max<int64_t>(0, info.next_fetch_us - now_us) / 1000;
  j["credit"] = info.credit;
  j["crawl_delay_ms"] = info.crawl_delay_us / 1000;
  j["retired"] = info.retired;
  j["robots"] = std::string(robots);
  return j;
}

bool HostRowMatches(const Json& row, const HostQuery& query) {
  if (!query.state.empty() && StringOf(row, "state") != query.state) {
    return false;
  }
  if (query.q.empty()) return true;
  return ascii::ToLower(StringOf(row, "host")).find(query.q) !=
         std::string::npos;
}

void SortHostRows(const HostQuery& query, std::vector<Json>* rows) {
  const SortKey* key = FindSortKey(query.sort);
  const std::string_view member = key != nullptr ? key->member : "queued";
  const bool by_host = member == "host";
  auto less = [&](const Json& a, const Json& b) {
    const std::string ha = StringOf(a, "host"), hb = StringOf(b, "host");
    if (!by_host) {
      const double na = NumberOf(a, member), nb = NumberOf(b, member);
      if (na != nb) return query.descending ? na > nb : na < nb;
      return ha < hb;  // ties always by name, for a stable page
    }
    return query.descending ? ha > hb : ha < hb;
  };
  const size_t keep = std::min(query.limit, rows->size());
  std::partial_sort(rows->begin(), rows->begin() + static_cast<long>(keep),
                    rows->end(), less);
  rows->resize(keep);
}

// ---------------------------------------------------------------------------
// Recent fetches

RecentFetches::RecentFetches(const Options& options)
    : capacity_(std::max<size_t>(1, options.capacity)) {}

void RecentFetches::Add(Entry entry) {
  if (entries_.size() >= capacity_) entries_.pop_front();
  entries_.push_back(std::move(entry));
}

Json RecentFetches::ForHost(std::string_view host_key, size_t max) const {
  Json out = Json::array();
  for (auto it = entries_.rbegin(); it != entries_.rend() && out.size() < max;
       ++it) {
    if (it->host_key != host_key) continue;
    out.push_back({{"url", it->url},
                   {"status", it->status},
                   {"error", it->error},
                   {"duration_ms", it->duration_ms},
                   {"bytes", it->bytes},
                   {"time", Iso8601Micros(it->wall_us)},
                   {"robots", it->robots}});
  }
  return out;
}

// ---------------------------------------------------------------------------
// Disk usage

Json DiskUsage::Get(int64_t now_us) {
  if (measured_us_ < 0 || now_us - measured_us_ >= cache_us_) {
    namespace fs = std::filesystem;
    uint64_t warc = 0, state = 0;
    std::error_code ec;
    // skip_permission_denied and error codes: a file removed while walking
    // (a rotated log, a compacted table) is no error.
    for (auto it = fs::recursive_directory_iterator(
             data_dir_, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code fe;
      if (!it->is_regular_file(fe) || fe) continue;
      const uint64_t size = it->file_size(fe);
      if (fe) continue;
      const auto rel = it->path().lexically_relative(data_dir_);
      if (!rel.empty() && *rel.begin() == "warc") {
        warc += size;
      } else {
        state += size;
      }
    }
    warc_bytes_ = warc;
    state_bytes_ = state;
    measured_us_ = now_us;
  }
  return {{"warc_bytes", warc_bytes_},
          {"state_bytes", state_bytes_},
          {"measured_s_ago", (now_us - measured_us_) / 1e6}};
}

// ---------------------------------------------------------------------------
// A record from its WARC

Result<RecordQuery> ParseRecordQuery(const QueryParams& params) {
  RecordQuery query;
  bool seen_warc = false, seen_offset = false, seen_length = false;
  for (const auto& [key, value] : params) {
    bool* seen = key == "warc"     ? &seen_warc
                 : key == "offset" ? &seen_offset
                 : key == "length" ? &seen_length
                                   : nullptr;
    if (seen == nullptr) {
      return Status::InvalidArgument("unknown parameter '" + key.substr(0, 64) +
                                     "' (known: warc, offset, length)");
    }
    if (*seen) {
      return Status::InvalidArgument("parameter '" + key +
                                     "' given more than once");
    }
    *seen = true;
    if (key == "warc") {
      // A plain file name of the crawl's own WARCs: no way out of the
      // directory, no hidden or temporary file.
      const bool plain =
          !value.empty() && value.size() <= 255 && value.front() != '.' &&
          std::all_of(value.begin(), value.end(), [](char c) {
            return ascii::IsAlnum(c) || c == '-' || c == '_' || c == '.';
          });
      if (!plain ||
          !(value.ends_with(".warc.gz") || value.ends_with(".warc"))) {
        return Status::InvalidArgument(
            "warc must be a file name ending in .warc.gz or .warc, as in "
            "a feed entry");
      }
      query.warc = value;
    } else if (key == "offset") {
      if (!ParseDecimal(value, 0, UINT64_MAX >> 1, &query.offset)) {
        return Status::InvalidArgument("offset must be a decimal number");
      }
    } else if (!ParseDecimal(value, 1, kMaxRecordLength, &query.length)) {
      return Status::InvalidArgument("length must be 1 .. " +
                                     std::to_string(kMaxRecordLength));
    }
  }
  if (!seen_warc || !seen_offset || !seen_length) {
    return Status::InvalidArgument(
        "warc, offset and length are required (a feed entry's)");
  }
  return query;
}

Result<Json> ReadRecordJson(const std::string& warc_dir,
                            const RecordQuery& query) {
  const std::string path = warc_dir + "/" + query.warc;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound("no WARC file " + query.warc);
  }
  store::ReaderOptions ro;
  // A record's block, decompressed: the page caps of the fetcher are far
  // below this; a bigger one is refused rather than read on the loop.
  ro.max_block_bytes = 4 * kMaxRecordLength;
  ro.max_header_bytes = 64u << 10;
  Result<store::Record> rec =
      store::ReadRecordAt(path, query.offset, query.length, ro);
  if (!rec.ok()) {
    return Status::InvalidArgument("no record at " + query.warc + " offset " +
                                   std::to_string(query.offset) + ": " +
                                   rec.status().message());
  }
  Json headers = Json::array();
  for (const auto& [name, value] : rec->fields) {
    headers.push_back(Json::array({name, value}));
  }
  Json out = Json::object();
  out["warc"] = query.warc;
  out["offset"] = query.offset;
  out["length"] = query.length;
  out["type"] = rec->type();
  out["target_uri"] = rec->Header("WARC-Target-URI");
  out["date"] = rec->Header("WARC-Date");
  out["warc_headers"] = std::move(headers);
  std::string_view block = rec->block;
  std::string_view body = block;
  if (rec->type() == "response" || rec->type() == "request") {
    // An HTTP message: its head as text, then the body.
    const size_t end = block.find("\r\n\r\n");
    const std::string_view head =
        end == std::string_view::npos ? block : block.substr(0, end);
    out["http_head"] = std::string(head.substr(0, kMaxRecordText));
    body = end == std::string_view::npos ? std::string_view()
                                         : block.substr(end + 4);
  }
  out["body_bytes"] = static_cast<uint64_t>(body.size());
  out["truncated"] = body.size() > kMaxRecordText;
  // JSON text: the console puts it in a text node, never in HTML; bytes
  // that are not UTF-8 are dumped as U+FFFD.
  out["body"] = std::string(body.substr(0, kMaxRecordText));
  return out;
}

}  // namespace crawld::daemon

#include "daemon/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <iterator>

#include "base/json.h"
#include "daemon/worker.h"

namespace crawld::daemon {

std::string FormatBytes(uint64_t bytes) {
  if (bytes >= (1ull << 30))
    return fmt::format("{:.2f} GB", bytes / 1073741824.0);
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MB", bytes / 1048576.0);
  return fmt::format("{:.1f} kB", bytes / 1024.0);
}

bool IsErrorCount(std::string_view name) {
  static constexpr std::string_view kErrors[] = {
      // fetch error classes (fetcher::ErrorClassName, and the resolver's)
      "dns", "blocked_private", "connect", "timeout", "tls", "too_large",
      "protocol", "other", "header_too_large", "framing", "incomplete",
      // answers and redirects
      "http_4xx", "http_5xx", "redirect_loop", "too_many_redirects",
      "retries_exhausted", "decode_error",
      // our own state
      "store_error", "record_refused", "seen_store_error", "checkpoint_failed",
      "inbox_log_failed", "rules_reload_failed", "stored_copy_unreadable"};
  return std::find(std::begin(kErrors), std::end(kErrors), name) !=
         std::end(kErrors);
}

void ProgressLine::Print(const CrawlStats& stats, const ProgressFigures& f,
                         int64_t now_us, int64_t start_us, bool final_line) {
  if (out_ == nullptr) return;
  uint64_t errors = 0;
  for (const auto& [k, v] : stats.counts) {
    if (IsErrorCount(k)) errors += v;
  }
  ProgressFigures all = f;
  all.pages = stats.pages;
  all.bytes = stats.bytes;
  all.middle = fmt::format("errors {}", errors);
  PrintFigures(all, now_us, start_us, final_line);
}

void ProgressLine::PrintFigures(const ProgressFigures& f, int64_t now_us,
                                int64_t start_us, bool final_line) {
  if (out_ == nullptr) return;
  if (last_us_ == 0) last_us_ = start_us;
  const double dt = std::max<int64_t>(1, now_us - last_us_) / 1e6;
  const double elapsed = std::max<int64_t>(1, now_us - start_us) / 1e6;
  const double rate =
      final_line ? f.pages / elapsed : (f.pages - last_pages_) / dt;
  last_pages_ = f.pages;
  last_us_ = now_us;
  const std::string line = fmt::format(
      "pages {} | {:.1f}/s | queued {} | hosts {} (active {}) | {} | {} | "
      "{:.0f}s",
      f.pages, rate, f.queued, f.hosts, f.active, f.middle,
      FormatBytes(f.bytes), elapsed);
  if (tty_) {
    fmt::print(out_, "\r\033[K{}{}", line, final_line ? "\n" : "");
  } else {
    fmt::print(out_, "{}\n", line);
  }
  fflush(out_);
}

void ProgressLine::Message(const std::string& text) {
  if (out_ == nullptr) return;
  fmt::print(out_, "{}{}\n", tty_ ? "\r\033[K" : "", text);
  fflush(out_);
}

std::string CrawlSummary::ToText() const {
  char head[256];
  snprintf(head, sizeof(head),
           "crawl %s: %" PRIu64
           " pages, %s, %.1f s, %.1f pages/s, "
           "%" PRIu64 " robots.txt fetches, %" PRIu64 " URLs left queued\n",
           stop_reason.c_str(), pages, FormatBytes(bytes).c_str(), seconds,
           seconds > 0 ? pages / seconds : 0.0, robots_fetches, queued_left);
  std::string out = head;
  if (!counts.empty()) {
    out += "counts:";
    for (const auto& [k, v] : counts) {
      // Appended piecewise: g++ 12 -O3 warns (-Wrestrict, a false positive)
      // on "literal" + std::string temporaries.
      out += ' ';
      out += k;
      out += '=';
      out += std::to_string(v);
    }
    out += "\n";
  }
  return out;
}

std::string CrawlSummary::ToJson() const {
  Json j = Json::object();
  j["stop_reason"] = stop_reason;
  j["pages"] = pages;
  j["robots_fetches"] = robots_fetches;
  j["bytes"] = bytes;
  // Milliseconds, as the text always gave them.
  j["seconds"] = std::round(seconds * 1000) / 1000;
  j["queued_left"] = queued_left;
  Json c = Json::object();
  for (const auto& [k, v] : counts) c[k] = v;
  j["counts"] = std::move(c);
  return json::Dump(j) + "\n";
}

void CrawlSummary::AddFiguresOf(std::string_view json_text) {
  json::Limits limits;
  limits.max_bytes = 64u << 20;
  auto j = json::Parse(json_text, limits);
  if (!j.ok()) return;
  auto num = [](const Json& o, const char* k) -> uint64_t {
    const Json* v = json::Find(o, k);
    return v != nullptr && v->is_number()
               ? static_cast<uint64_t>(v->get<double>())
               : 0;
  };
  pages += num(*j, "pages");
  robots_fetches += num(*j, "robots_fetches");
  bytes += num(*j, "bytes");
  queued_left += num(*j, "queued_left");
  if (const Json* c = json::Find(*j, "counts");
      c != nullptr && c->is_object()) {
    for (const auto& [k, v] : c->items()) {
      if (v.is_number()) counts[k] += static_cast<uint64_t>(v.get<double>());
    }
  }
}

}  // namespace crawld::daemon

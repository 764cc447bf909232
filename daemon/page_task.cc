#include "daemon/page_task.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "base/ascii.h"
#include "dedupe/dedupe.h"
#include "url/url.h"

namespace crawld::daemon {

void PageTask::Run() {
  Parse();
  // Whatever the parse made of it, the body is recorded: dedupe it.
  if (documents != nullptr) documents->Check(this);
}

void PageTask::Parse() {
  // Page-level robots directives from the header apply to any type.
  std::vector<std::string_view> xrt;
  for (const auto& [name, value] : response->headers) {
    if (ascii::EqualsIgnoreCase(name, "X-Robots-Tag")) xrt.push_back(value);
  }
  header_robots = parser::ParseXRobotsTag(xrt, robots_token);
  std::string decoded;  // empty when the body needs no decoding
  Result<std::string_view> body =
      fetcher::DecodeBodyView(*response, max_decoded, &decoded, &capped);
  if (!body.ok()) {
    decode = body.status();
    return;
  }
  if (sitemap != nullptr) {
    auto doc_url = url::Parse(url);
    if (!doc_url.ok()) return;
    sitemap_report =
        ReadSitemapLinks(*body, *doc_url, sitemap_hosts, *sitemap, &page);
    parsed = true;
    return;
  }
  const std::string content_type = response->Header("Content-Type");
  const Processor* processor =
      parsers->For(parser::SniffMime(content_type, *body));
  auto doc_url = url::Parse(url);
  if (processor == nullptr || !doc_url.ok()) return;  // archived only
  processor->Process(*body, content_type, *doc_url, robots_token, &page);
  parsed = true;
  // Short texts say too little for a SimHash to compare.
  if (want_simhash && page.text.size() >= 200) {
    simhash = dedupe::SimHash(page.text);
  }
}

ParseSlots::ParseSlots(const Options& options, WorkPool* pool)
    : options_(options), pool_(pool) {
  options_.slots = std::max<size_t>(options_.slots, 1);
  for (size_t i = 0; i < options_.slots; ++i) {
    free_.push_back(std::make_unique<ProcessorRegistry>(
        ProcessorRegistry::Default(options_.parser, options_.feeds)));
  }
}

void ParseSlots::Run(PageTask* task, std::function<void()> done) {
  const bool big = task->response->body.size() > options_.big_body_bytes;
  (big ? big_ : small_).push_back({task, std::move(done), big});
  StartQueued();
}

void ParseSlots::StartQueued() {
  const size_t max_big = options_.slots > 1 ? options_.slots - 1 : 1;
  while (!free_.empty()) {
    std::deque<Waiting>* from = nullptr;
    if (!big_.empty() && big_running_ < max_big) {
      from = &big_;
    } else if (!small_.empty()) {
      from = &small_;
    } else {
      return;
    }
    Waiting w = std::move(from->front());
    from->pop_front();
    Start(std::move(w));
  }
}

void ParseSlots::Start(Waiting w) {
  ProcessorRegistry* parsers = free_.back().release();
  free_.pop_back();
  if (w.big) ++big_running_;
  PageTask* t = w.task;
  t->parsers = parsers;
  pool_->Run([t] { t->Run(); },
             [this, parsers, big = w.big, done = std::move(w.done)] {
               free_.emplace_back(parsers);
               if (big) --big_running_;
               done();
               StartQueued();
             });
}

void CountParseCuts(const parser::Page& page, CrawlStats* stats) {
  // What the parser's bounds cut (issue 19: a page of any shape is parsed
  // in bounded time): counted, never silent.
  const parser::ParseCuts& c = page.cuts;
  if (page.invalid_links > 0) stats->Count("invalid_url", page.invalid_links);
  if (c.bytes_cut) stats->Count("parse_bytes_cut");
  if (c.elements_cut) stats->Count("parse_elements_cut");
  if (c.attributes_dropped > 0) {
    stats->Count("parse_attributes_dropped", c.attributes_dropped);
  }
  if (c.elements_flattened > 0) {
    stats->Count("parse_elements_flattened", c.elements_flattened);
  }
  if (c.links_dropped > 0) stats->Count("parse_links_dropped", c.links_dropped);
  if (c.noscript_reparses > 0) {
    stats->Count("parse_noscript_reparses", c.noscript_reparses);
  }
}

}  // namespace crawld::daemon

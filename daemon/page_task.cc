#include "daemon/page_task.h"

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
  Result<std::string> body =
      fetcher::DecodeBody(*response, max_decoded, &capped);
  if (!body.ok()) {
    decode = body.status();
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

}  // namespace crawld::daemon

#include "daemon/processors.h"

#include "base/ascii.h"

namespace crawld::daemon {

void HtmlProcessor::Process(std::string_view body,
                            std::string_view content_type,
                            const url::Url& document_url,
                            std::string_view robots_token,
                            parser::Page* page) const {
  extractor_.ExtractInto(body, content_type, document_url, robots_token, page);
}

ProcessorRegistry ProcessorRegistry::Default(const parser::Options& options) {
  ProcessorRegistry r;
  auto html = std::make_shared<HtmlProcessor>(options);
  r.Register("text/html", html);
  r.Register("application/xhtml+xml", html);
  return r;
}

void ProcessorRegistry::Register(std::string essence,
                                 std::shared_ptr<const Processor> p) {
  by_type_[ascii::ToLower(essence)] = std::move(p);
}

const Processor* ProcessorRegistry::For(std::string_view essence) const {
  auto it = by_type_.find(essence);
  return it == by_type_.end() ? nullptr : it->second.get();
}

}  // namespace crawld::daemon

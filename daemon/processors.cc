#include "daemon/processors.h"

#include <algorithm>
#include <cctype>

namespace crawld::daemon {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view TrimWs(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// "Text/HTML; charset=x" -> "text/html"; "" when not type/subtype.
std::string Essence(std::string_view content_type) {
  std::string_view v = TrimWs(content_type.substr(0, content_type.find(';')));
  size_t slash = v.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == v.size()) {
    return "";
  }
  return Lower(v);
}

// WHATWG MIME Sniffing: a "binary data byte".
bool IsBinaryByte(unsigned char c) {
  return c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1A) ||
         (c >= 0x1C && c <= 0x1F);
}

bool HasBom(std::string_view b) {
  return b.starts_with("\xFE\xFF") || b.starts_with("\xFF\xFE") ||
         b.starts_with("\xEF\xBB\xBF");
}

bool HasBinary(std::string_view head) {
  return std::any_of(head.begin(), head.end(), [](char c) {
    return IsBinaryByte(static_cast<unsigned char>(c));
  });
}

// The HTML patterns of the standard's table: "<" + tag name, then a
// tag-terminating byte (space or '>'), case-insensitive, after whitespace.
bool LooksLikeHtml(std::string_view b) {
  size_t i = 0;
  while (i < b.size() && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' ||
                          b[i] == '\r' || b[i] == '\f')) {
    ++i;
  }
  b.remove_prefix(i);
  static constexpr std::string_view kTags[] = {"<!doctype html",
                                               "<html",
                                               "<head",
                                               "<script",
                                               "<iframe",
                                               "<h1",
                                               "<div",
                                               "<font",
                                               "<table",
                                               "<a",
                                               "<style",
                                               "<title",
                                               "<b",
                                               "<body",
                                               "<br",
                                               "<p",
                                               "<!--"};
  for (std::string_view tag : kTags) {
    if (b.size() <= tag.size()) continue;
    if (Lower(b.substr(0, tag.size())) != tag) continue;
    const char t = b[tag.size()];
    if (t == ' ' || t == '>' || tag == "<!--") return true;
  }
  return false;
}

std::string SniffUnknown(std::string_view head) {
  if (LooksLikeHtml(head)) return "text/html";
  if (head.starts_with("<?xml")) return "text/xml";
  if (head.starts_with("%PDF-")) return "application/pdf";
  if (head.starts_with("\x89PNG\r\n\x1A\n")) return "image/png";
  if (head.starts_with("GIF87a") || head.starts_with("GIF89a")) {
    return "image/gif";
  }
  if (head.starts_with("\xFF\xD8\xFF")) return "image/jpeg";
  if (head.starts_with("PK\x03\x04")) return "application/zip";
  if (head.starts_with("\x1F\x8B\x08")) return "application/x-gzip";
  if (HasBom(head) || !HasBinary(head)) return "text/plain";
  return "application/octet-stream";
}

}  // namespace

std::string SniffMime(std::string_view content_type, std::string_view body) {
  const std::string_view head = body.substr(0, 1445);
  std::string essence = Essence(content_type);
  if (essence.empty() || essence == "unknown/unknown" ||
      essence == "application/unknown" || essence == "*/*") {
    return SniffUnknown(head);
  }
  if ((essence.starts_with("text/") || essence == "application/xhtml+xml") &&
      !HasBom(head) && HasBinary(head)) {
    return "application/octet-stream";
  }
  return essence;
}

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
  by_type_[Lower(essence)] = std::move(p);
}

const Processor* ProcessorRegistry::For(std::string_view essence) const {
  auto it = by_type_.find(essence);
  return it == by_type_.end() ? nullptr : it->second.get();
}

}  // namespace crawld::daemon

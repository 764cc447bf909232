// MIME sniffing; see sniff.h. Section numbers are those of the WHATWG MIME
// Sniffing Standard.
#include "parser/sniff.h"

#include <cstdint>

#include "base/ascii.h"

namespace crawld::parser {
namespace {

// "Resource header": the standard reads at most 1445 bytes.
constexpr size_t kHeaderBytes = 1445;

// 3. "binary data byte".
bool IsBinaryByte(uint8_t c) {
  return c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1A) ||
         (c >= 0x1C && c <= 0x1F);
}

// 4.1 "whitespace byte".
bool IsWhitespaceByte(char c) {
  return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ';
}

// 6. "pattern matching algorithm": `pattern` and `mask` of equal length;
// 0xFF in the mask compares the byte, 0x00 ignores it.
bool Matches(std::string_view input, std::string_view pattern,
             std::string_view mask = {}) {
  if (input.size() < pattern.size()) return false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const auto m = mask.empty() ? uint8_t{0xFF} : static_cast<uint8_t>(mask[i]);
    if ((static_cast<uint8_t>(input[i]) & m) !=
        (static_cast<uint8_t>(pattern[i]) & m)) {
      return false;
    }
  }
  return true;
}

using std::literals::string_view_literals::operator""sv;

// 7.1, the scriptable rows: HTML signatures ("<" + tag name, ASCII
// case-insensitive, then a tag-terminating byte: space or '>').
bool IsHtml(std::string_view b) {
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
    if (!ascii::StartsWithIgnoreCase(b, tag)) continue;
    const char t = b[tag.size()];
    if (t == ' ' || t == '>') return true;
  }
  return false;
}

// 6.1 images.
std::string_view ImageType(std::string_view b) {
  if (Matches(b, "\x00\x00\x01\x00"sv) || Matches(b, "\x00\x00\x02\x00"sv)) {
    return "image/x-icon";
  }
  if (Matches(b, "BM")) return "image/bmp";
  if (Matches(b, "GIF87a") || Matches(b, "GIF89a")) return "image/gif";
  if (Matches(b, "RIFF\x00\x00\x00\x00WEBPVP"sv,
              "\xFF\xFF\xFF\xFF\x00\x00\x00\x00\xFF\xFF\xFF\xFF\xFF\xFF"sv)) {
    return "image/webp";
  }
  if (Matches(b, "\x89PNG\r\n\x1A\n")) return "image/png";
  if (Matches(b, "\xFF\xD8\xFF")) return "image/jpeg";
  return {};
}

// 6.2.1: an "ftyp" box whose major or a compatible brand starts "mp4".
bool IsMp4(std::string_view b) {
  if (b.size() < 12) return false;
  const uint32_t box =
      (static_cast<uint32_t>(static_cast<uint8_t>(b[0])) << 24) |
      (static_cast<uint32_t>(static_cast<uint8_t>(b[1])) << 16) |
      (static_cast<uint32_t>(static_cast<uint8_t>(b[2])) << 8) |
      static_cast<uint32_t>(static_cast<uint8_t>(b[3]));
  if (b.size() < box || box % 4 != 0 || b.substr(4, 4) != "ftyp") return false;
  if (b.substr(8, 3) == "mp4") return true;
  for (size_t at = 16; at + 3 <= box; at += 4) {
    if (b.substr(at, 3) == "mp4") return true;
  }
  return false;
}

// 6.2 audio and video (without the MP3-frame pattern).
std::string_view AudioVideoType(std::string_view b) {
  constexpr std::string_view kRiffMask =
      "\xFF\xFF\xFF\xFF\x00\x00\x00\x00\xFF\xFF\xFF\xFF"sv;
  if (Matches(b,
              "FORM\x00\x00\x00\x00"
              "AIFF"sv,
              kRiffMask)) {
    return "audio/aiff";
  }
  if (Matches(b, "ID3")) return "audio/mpeg";
  if (Matches(b, "OggS\x00"sv)) return "application/ogg";
  if (Matches(b, "MThd\x00\x00\x00\x06"sv)) return "audio/midi";
  if (Matches(b,
              "RIFF\x00\x00\x00\x00"
              "AVI "sv,
              kRiffMask)) {
    return "video/avi";
  }
  if (Matches(b,
              "RIFF\x00\x00\x00\x00"
              "WAVE"sv,
              kRiffMask)) {
    return "audio/wave";
  }
  if (IsMp4(b)) return "video/mp4";
  if (Matches(b, "\x1A\x45\xDF\xA3")) return "video/webm";
  return {};
}

// 6.3 fonts (without embedded OpenType).
std::string_view FontType(std::string_view b) {
  if (Matches(b, "\x00\x01\x00\x00"sv)) return "font/ttf";
  if (Matches(b, "OTTO")) return "font/otf";
  if (Matches(b, "ttcf")) return "font/collection";
  if (Matches(b, "wOFF")) return "font/woff";
  if (Matches(b, "wOF2")) return "font/woff2";
  return {};
}

// 6.4 archives.
std::string_view ArchiveType(std::string_view b) {
  if (Matches(b, "\x1F\x8B\x08")) return "application/x-gzip";
  if (Matches(b, "PK\x03\x04")) return "application/zip";
  if (Matches(b, "Rar \x1A\x07\x00"sv)) return "application/x-rar-compressed";
  return {};
}

// Binary signatures of 7.1 that no text body starts with.
std::string_view BinaryType(std::string_view b) {
  if (Matches(b, "%PDF-")) return "application/pdf";
  if (Matches(b, "%!PS-Adobe-")) return "application/postscript";
  for (auto f : {ImageType, AudioVideoType, FontType, ArchiveType}) {
    std::string_view t = f(b);
    if (!t.empty()) return t;
  }
  return {};
}

bool HasBinaryByte(std::string_view b) {
  for (char c : b) {
    if (IsBinaryByte(static_cast<uint8_t>(c))) return true;
  }
  return false;
}

bool HasBom(std::string_view b) {
  return Matches(b, "\xFE\xFF") || Matches(b, "\xFF\xFE") ||
         Matches(b, "\xEF\xBB\xBF");
}

// 7.1 "rules for identifying an unknown MIME type", sniff-scriptable set.
std::string SniffUnknown(std::string_view head) {
  std::string_view trimmed = head;
  while (!trimmed.empty() && IsWhitespaceByte(trimmed.front())) {
    trimmed.remove_prefix(1);
  }
  if (IsHtml(trimmed)) return "text/html";
  if (Matches(trimmed, "<?xml")) return "text/xml";
  if (Matches(head, "%PDF-")) return "application/pdf";
  if (Matches(head, "%!PS-Adobe-")) return "application/postscript";
  if (HasBom(head)) return "text/plain";
  std::string_view t = BinaryType(head);
  if (!t.empty()) return std::string(t);
  return HasBinaryByte(head) ? "application/octet-stream" : "text/plain";
}

// "Text/HTML; charset=x" -> "text/html"; "" when not type/subtype.
std::string Essence(std::string_view content_type) {
  std::string_view v = content_type.substr(0, content_type.find(';'));
  while (!v.empty() && ascii::IsHttpSpace(v.front())) v.remove_prefix(1);
  while (!v.empty() && ascii::IsHttpSpace(v.back())) v.remove_suffix(1);
  const size_t slash = v.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == v.size()) {
    return "";
  }
  std::string out(v);
  for (char& c : out) c = ascii::ToLower(c);
  return out;
}

}  // namespace

std::string SniffMime(std::string_view content_type, std::string_view body) {
  const std::string_view head = body.substr(0, kHeaderBytes);
  std::string essence = Essence(content_type);
  if (essence.empty() || essence == "unknown/unknown" ||
      essence == "application/unknown" || essence == "*/*") {
    return SniffUnknown(head);
  }
  if (essence.starts_with("text/") || essence == "application/xhtml+xml") {
    // A few signatures are plain words ("BM", "ID3", "OTTO"): past the two
    // textual ones, a text body must also hold a binary data byte.
    std::string_view t = BinaryType(head);
    if (!t.empty() && (t == "application/pdf" ||
                       t == "application/postscript" || HasBinaryByte(head))) {
      return std::string(t);
    }
  }
  return essence;
}

}  // namespace crawld::parser

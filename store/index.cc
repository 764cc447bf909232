// SURT keys, CDXJ lines, sorting and lookup of the per-WARC CDXJ index, and
// the line-file repair shared with the feed. Layout: docs/STORE.md.
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/ascii.h"
#include "base/fd_io.h"
#include "base/json.h"
#include "base/time.h"
#include "store/store.h"
#include "store/warc_internal.h"

namespace crawld::store {

namespace {

using ascii::HexValue;

std::string Lower(std::string_view s) { return ascii::ToLower(s); }

// Decodes %XX until nothing changes, as the Google canonicalizer does, so
// that "%2525" and "%" give the same key.
std::string UnescapeRepeatedly(std::string s) {
  for (;;) {
    std::string out;
    out.reserve(s.size());
    bool changed = false;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 &&
          HexValue(s[i + 2]) >= 0) {
        out.push_back(
            static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
        i += 2;
        changed = true;
      } else {
        out.push_back(s[i]);
      }
    }
    if (!changed) return out;
    s = std::move(out);
  }
}

// Escapes only what cannot stand in a URL key: controls, space, '#', '%'
// and bytes >= 0x7F.
std::string EscapeMinimal(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7F || c == '#' || c == '%') {
      out.push_back('%');
      out.push_back(ascii::HexDigitUpper(c >> 4));
      out.push_back(ascii::HexDigitUpper(c));
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

bool AllOf(std::string_view s, bool (*pred)(unsigned char)) {
  for (char c : s) {
    if (!pred(static_cast<unsigned char>(c))) return false;
  }
  return true;
}
bool IsAlnum(unsigned char c) { return ascii::IsAlnum(static_cast<char>(c)); }
bool IsAlpha(unsigned char c) { return ascii::IsAlpha(static_cast<char>(c)); }
bool IsDigit(unsigned char c) { return ascii::IsDigit(static_cast<char>(c)); }
bool IsTokenChar(unsigned char c) { return IsAlnum(c) || c == '-'; }

// The query session ids the IA canonicalizer strips (surt's
// URLRegexTransformer): name=value with a value of a fixed shape.
bool IsSessionArg(std::string_view arg) {
  size_t eq = arg.find('=');
  if (eq == std::string_view::npos) return false;
  std::string name = Lower(arg.substr(0, eq));
  std::string_view value = arg.substr(eq + 1);
  if (name == "jsessionid" || name == "phpsessid" || name == "sid")
    return value.size() == 32 && AllOf(value, IsAlnum);
  if (name.size() == 20 && name.compare(0, 12, "aspsessionid") == 0 &&
      AllOf(std::string_view(name).substr(12), IsAlpha))
    return value.size() == 24 && AllOf(value, IsAlpha);
  return false;
}

bool IsArg(std::string_view arg, std::string_view name,
           bool (*pred)(unsigned char)) {
  size_t eq = arg.find('=');
  return eq != std::string_view::npos &&
         ascii::EqualsIgnoreCase(arg.substr(0, eq), name) &&
         eq + 1 < arg.size() && AllOf(arg.substr(eq + 1), pred);
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t p = s.find(sep, start);
    out.emplace_back(s.substr(start, p - start));
    if (p == std::string_view::npos) break;
    start = p + 1;
  }
  return out;
}

std::string SurtQuery(std::string_view raw) {
  std::string q = UnescapeRepeatedly(std::string(raw));
  std::vector<std::string> args = Split(q, '&');
  // Removing a session id also removes the '&' after it; one at the end
  // leaves the '&' before it (an empty argument), which is what the regex
  // rewrite in surt does.
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    size_t skip = 0;
    if (IsSessionArg(args[i])) {
      skip = 1;
    } else if (IsArg(args[i], "cfid", IsDigit) && i + 1 < args.size() &&
               IsArg(args[i + 1], "cftoken", IsTokenChar)) {
      skip = 2;
    }
    if (skip == 0) {
      kept.push_back(std::move(args[i]));
      continue;
    }
    i += skip - 1;
    if (i + 1 == args.size()) kept.emplace_back();
  }
  for (std::string& a : kept) a = Lower(EscapeMinimal(a));
  std::sort(kept.begin(), kept.end());
  std::string out;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (i > 0) out.push_back('&');
    out.append(kept[i]);
  }
  return out;
}

bool IsDottedQuad(std::string_view host) {
  std::vector<std::string> parts = Split(host, '.');
  if (parts.size() != 4) return false;
  for (const std::string& p : parts) {
    if (p.empty() || p.size() > 3 || !AllOf(p, IsDigit)) return false;
  }
  return true;
}

std::string SurtHost(std::string host) {
  // Escaped so that no byte of a hostile host can split the CDXJ line.
  host = Lower(EscapeMinimal(host));
  while (!host.empty() && host.back() == '.') host.pop_back();
  if (host.empty() || host.front() == '[' || IsDottedQuad(host)) return host;
  // "www.", "www2.", "www34." are dropped once (IA massageHost).
  if (host.compare(0, 3, "www") == 0) {
    size_t i = 3;
    while (i < host.size() && ascii::IsDigit(host[i])) ++i;
    if (i < host.size() && host[i] == '.' && i + 1 < host.size())
      host.erase(0, i + 1);
  }
  std::vector<std::string> labels = Split(host, '.');
  std::string out;
  for (size_t i = labels.size(); i-- > 0;) {
    if (labels[i].empty()) continue;
    if (!out.empty()) out.push_back(',');
    out.append(labels[i]);
  }
  return out;
}

// The key is the first field of a space-separated line: whatever path
// produced it, no space or control byte may stay in it.
std::string EscapeControls(std::string s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7F) {
      out.push_back('%');
      out.push_back(ascii::HexDigitUpper(c >> 4));
      out.push_back(ascii::HexDigitUpper(c));
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

std::string SurtUnsafe(std::string_view url_in);

}  // namespace

std::string Surt(std::string_view url) {
  return EscapeControls(SurtUnsafe(url));
}

namespace {

std::string SurtUnsafe(std::string_view url_in) {
  // Tab, CR and LF never belong to a URL; trim blanks around it.
  std::string url;
  for (char c : url_in) {
    if (c != '\t' && c != '\r' && c != '\n') url.push_back(c);
  }
  while (!url.empty() && url.front() == ' ') url.erase(0, 1);
  while (!url.empty() && url.back() == ' ') url.pop_back();
  if (url.empty()) return "-";

  size_t colon = url.find(':');
  if (colon == std::string::npos || colon == 0) return url;
  std::string scheme = Lower(std::string_view(url).substr(0, colon));
  for (char c : scheme) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' &&
        c != '.')
      return url;
  }
  if (url.compare(colon + 1, 2, "//") != 0 || scheme == "filedesc" ||
      scheme == "warcinfo" || scheme == "dns" || scheme == "mailto")
    return url;

  std::string_view rest = std::string_view(url).substr(colon + 3);
  // Extra slashes before the host ("http:////host") are noise.
  while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
  size_t auth_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, auth_end);
  rest = auth_end == std::string_view::npos ? std::string_view()
                                            : rest.substr(auth_end);
  if (size_t at = authority.rfind('@'); at != std::string_view::npos)
    authority.remove_prefix(at + 1);
  std::string_view host = authority, port;
  size_t port_colon = authority.rfind(':');
  if (port_colon != std::string_view::npos &&
      authority.find(']', port_colon) == std::string_view::npos) {
    host = authority.substr(0, port_colon);
    port = authority.substr(port_colon + 1);
  }
  while (port.size() > 1 && port.front() == '0') port.remove_prefix(1);
  if ((scheme == "http" && port == "80") ||
      (scheme == "https" && port == "443"))
    port = {};

  std::string out = SurtHost(std::string(host));
  if (!port.empty()) {
    out.push_back(':');
    out.append(port);
  }
  out.push_back(')');

  rest = rest.substr(0, rest.find('#'));
  size_t qmark = rest.find('?');
  std::string_view raw_path = rest.substr(0, qmark);
  std::string path = EscapeMinimal(UnescapeRepeatedly(std::string(raw_path)));
  std::string collapsed;
  for (char c : path) {
    if (c == '/' && !collapsed.empty() && collapsed.back() == '/') continue;
    collapsed.push_back(c);
  }
  if (collapsed.empty() || collapsed.front() != '/')
    collapsed.insert(collapsed.begin(), '/');
  if (collapsed.size() > 1 && collapsed.back() == '/') collapsed.pop_back();
  out.append(Lower(collapsed));
  if (qmark != std::string_view::npos) {
    std::string q = SurtQuery(rest.substr(qmark + 1));
    if (!q.empty()) {
      out.push_back('?');
      out.append(q);
    }
  }
  return out;
}

}  // namespace

std::string FormatCdxjLine(const CdxjEntry& e) {
  // Python json.dumps spacing (", " and ": "), as pywb's indexer writes,
  // so lines from both tools sort and diff alike.
  std::string line = e.surt;
  line.push_back(' ');
  line.append(e.timestamp);
  line.append(" {\"url\": ");
  json::AppendQuoted(&line, e.url);
  line.append(", \"mime\": ");
  json::AppendQuoted(&line, e.mime);
  if (e.status > 0) {
    line.append(", \"status\": \"");
    line.append(std::to_string(e.status));
    line.push_back('"');
  }
  if (!e.digest.empty()) {
    line.append(", \"digest\": ");
    json::AppendQuoted(&line, e.digest);
  }
  line.append(", \"length\": \"");
  line.append(std::to_string(e.length));
  line.append("\", \"offset\": \"");
  line.append(std::to_string(e.offset));
  line.append("\", \"filename\": ");
  json::AppendQuoted(&line, e.filename);
  if (e.revisit || e.flags.noindex) {
    line.append(", \"flags\": [");
    bool first = true;
    for (auto [set, name] : {std::pair{e.flags.noindex, "\"noindex\""},
                             std::pair{e.revisit, "\"revisit\""}}) {
      if (!set) continue;
      if (!first) line.append(", ");
      line.append(name);
      first = false;
    }
    line.push_back(']');
  }
  if (!e.flags.near_duplicate_of.empty()) {
    line.append(", \"near_duplicate_of\": ");
    json::AppendQuoted(&line, e.flags.near_duplicate_of);
  }
  line.append("}\n");
  return line;
}

namespace {

// A CDXJ number: pywb writes strings, other tools plain numbers.
std::optional<uint64_t> NumberField(const Json& obj, std::string_view key) {
  const Json* v = json::Find(obj, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) return std::nullopt;  // negative
  if (!v->is_string()) return std::nullopt;
  const std::string& s = v->get_ref<const std::string&>();
  if (s.empty() || s.size() > 19 || !AllOf(s, IsDigit)) return std::nullopt;
  return std::stoull(s);
}

std::string StringField(const Json& obj, std::string_view key) {
  const Json* v = json::Find(obj, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

}  // namespace

Result<CdxjEntry> ParseCdxjLine(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos)
    return Status::InvalidArgument("cdxj: expected '<key> <timestamp> {json}'");
  CdxjEntry e;
  e.surt = std::string(line.substr(0, sp1));
  e.timestamp = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  if (e.surt.empty()) return Status::InvalidArgument("cdxj: empty key");
  if (e.timestamp.empty() || e.timestamp.size() > 17 ||
      !AllOf(e.timestamp, IsDigit))
    return Status::InvalidArgument("cdxj: bad timestamp '" + e.timestamp + "'");
  auto obj = internal::ParseFlatJsonObject(line.substr(sp2 + 1));
  if (!obj) return Status::InvalidArgument("cdxj: the JSON block is invalid");
  e.url = StringField(*obj, "url");
  if (e.url.empty()) return Status::InvalidArgument("cdxj: no url");
  e.mime = StringField(*obj, "mime");
  e.digest = StringField(*obj, "digest");
  e.filename = StringField(*obj, "filename");
  if (auto s = NumberField(*obj, "status"); s && *s < 1000)
    e.status = static_cast<int>(*s);
  auto length = NumberField(*obj, "length");
  auto offset = NumberField(*obj, "offset");
  if (!length || !offset || e.filename.empty())
    return Status::InvalidArgument("cdxj: length, offset and filename needed");
  e.length = *length;
  e.offset = *offset;
  if (const Json* flags = json::Find(*obj, "flags"); flags != nullptr) {
    // ParseFlatJsonObject allows only arrays of strings as arrays.
    if (!flags->is_array())
      return Status::InvalidArgument("cdxj: flags is not a list");
    for (const Json& f : *flags) {
      if (f == "noindex") e.flags.noindex = true;
      if (f == "revisit") e.revisit = true;
    }
  }
  if (e.mime == "warc/revisit") e.revisit = true;
  e.flags.near_duplicate_of = StringField(*obj, "near_duplicate_of");
  return e;
}

namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::IOError("cdxj: cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return Status::IOError("cdxj: read error on " + path);
  return ss.str();
}

// The complete lines of `data` (a torn last line is left out).
std::vector<std::string_view> CompleteLines(std::string_view data) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  for (;;) {
    size_t nl = data.find('\n', start);
    if (nl == std::string_view::npos) break;
    lines.push_back(data.substr(start, nl + 1 - start));
    start = nl + 1;
  }
  return lines;
}

}  // namespace

Result<uint64_t> SortCdxj(const std::string& in, const std::string& out) {
  auto data = ReadFile(in);
  if (!data.ok()) return data.status();
  std::vector<std::string_view> lines = CompleteLines(*data);
  std::sort(lines.begin(), lines.end());
  const std::string tmp = out + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::IOError("cdxj: create " + tmp + ": " + strerror(errno));
  std::string buf;
  buf.reserve(data->size());
  for (std::string_view l : lines) buf.append(l);
  Status status;
  if (!WriteFull(fd, buf.data(), buf.size()))
    status = Status::IOError("cdxj: write " + tmp + ": " + strerror(errno));
  if (status.ok() && ::fsync(fd) != 0)
    status = Status::IOError("cdxj: fsync " + tmp + ": " + strerror(errno));
  if (::close(fd) != 0 && status.ok())
    status = Status::IOError("cdxj: close " + tmp + ": " + strerror(errno));
  if (status.ok() && ::rename(tmp.c_str(), out.c_str()) != 0)
    status = Status::IOError("cdxj: rename to " + out + ": " + strerror(errno));
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  return static_cast<uint64_t>(lines.size());
}

Result<std::vector<CdxjEntry>> LookupCdxj(const std::string& path,
                                          std::string_view url) {
  auto data = ReadFile(path);
  if (!data.ok()) return data.status();
  const std::string key = Surt(url);
  std::vector<CdxjEntry> out;
  uint64_t offset = 0;
  for (std::string_view line : CompleteLines(*data)) {
    const uint64_t at = offset;
    offset += line.size();
    // Compare the key first: parsing every line would cost a JSON parse
    // per record.
    if (line.size() <= key.size() || line.compare(0, key.size(), key) != 0 ||
        line[key.size()] != ' ')
      continue;
    auto e = ParseCdxjLine(line);
    if (!e.ok())
      return Status::Corruption(path + ": offset " + std::to_string(at) + ": " +
                                e.status().message());
    out.push_back(std::move(e).value());
  }
  return out;
}

Result<uint64_t> TruncateToLastCompleteLine(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Status::IOError("open " + path + ": " + strerror(errno));
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0) {
    Status s = Status::IOError("seek " + path + ": " + strerror(errno));
    ::close(fd);
    return s;
  }
  // Scan backwards in blocks for the last '\n'.
  char buf[4096];
  off_t end = size;
  off_t keep = 0;
  while (end > 0) {
    off_t start = end > static_cast<off_t>(sizeof(buf))
                      ? end - static_cast<off_t>(sizeof(buf))
                      : 0;
    ssize_t n = ::pread(fd, buf, static_cast<size_t>(end - start), start);
    if (n < 0 && errno == EINTR) continue;
    if (n != end - start) {
      Status s = Status::IOError("read " + path + ": " +
                                 (n < 0 ? strerror(errno) : "short read"));
      ::close(fd);
      return s;
    }
    const char* nl =
        static_cast<const char*>(memrchr(buf, '\n', static_cast<size_t>(n)));
    if (nl != nullptr) {
      keep = start + (nl - buf) + 1;
      break;
    }
    end = start;
  }
  if (keep != size && ::ftruncate(fd, keep) != 0) {
    Status s = Status::IOError("truncate " + path + ": " + strerror(errno));
    ::close(fd);
    return s;
  }
  ::close(fd);
  return static_cast<uint64_t>(keep);
}

Result<RevisitOf> OriginalFromCdxj(const CdxjEntry& entry,
                                   const std::string& warc_dir) {
  if (entry.revisit || entry.mime == "warc/revisit")
    return Status::InvalidArgument(
        "cdxj: the line of " + entry.url +
        " is a revisit; its record holds no payload (refer to its original)");
  if (entry.digest.empty())
    return Status::InvalidArgument("cdxj: the line of " + entry.url +
                                   " has no payload digest");
  // 14 digits (to the second), or more (some indexers add milliseconds:
  // the second is what a revisit can name without the record).
  const std::string& ts = entry.timestamp;
  if (ts.size() < 14 || !std::all_of(ts.begin(), ts.end(), ascii::IsDigit))
    return Status::InvalidArgument("cdxj: bad timestamp '" + ts + "'");
  RevisitOf o;
  o.profile = RevisitProfile::kIdenticalPayloadDigest;
  o.target_uri = entry.url;
  // pywb's form is the base32 value alone; take a labelled one as it is.
  o.payload_digest = entry.digest.find(':') == std::string::npos
                         ? "sha1:" + entry.digest
                         : entry.digest;
  // The line knows the second only; the record, if at hand, knows better.
  o.date = ts.substr(0, 4) + "-" + ts.substr(4, 2) + "-" + ts.substr(6, 2) +
           "T" + ts.substr(8, 2) + ":" + ts.substr(10, 2) + ":" +
           ts.substr(12, 2) + "Z";
  if (warc_dir.empty() || entry.filename.empty() ||
      entry.filename.find('/') != std::string::npos)
    return o;
  const std::string path = warc_dir + "/" + entry.filename;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return o;  // not at hand
  Result<Record> rec = ReadRecordAt(path, entry.offset, entry.length);
  auto stale = [&](const std::string& why) {
    return Status::Corruption("cdxj: " + path + " at " +
                              std::to_string(entry.offset) + ": " + why +
                              " (stale index?)");
  };
  if (!rec.ok()) return stale(rec.status().message());
  if (rec->type() != "response") return stale("not a response record");
  if (rec->Header("WARC-Target-URI") != entry.url)
    return stale("the record is of " + rec->Header("WARC-Target-URI"));
  // DigestMatches wants ours as "sha1:" + upper-case base32.
  std::string ours = o.payload_digest;
  for (char& c : ours) c = ascii::ToUpper(c);
  if (ascii::StartsWithIgnoreCase(ours, "sha1:")) ours.replace(0, 5, "sha1:");
  const auto same =
      internal::DigestMatches(rec->Header("WARC-Payload-Digest"), ours);
  if (!same || !*same) return stale("its payload digest differs");
  o.record_id = rec->Header("WARC-Record-ID");
  o.date = rec->Header("WARC-Date");
  return o;
}

}  // namespace crawld::store

// store/earlier.cc: the captures of earlier crawls by payload digest
// (store.h, "Earlier crawls").
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/ascii.h"
#include "store/store.h"

namespace crawld::store {
namespace {

using Sha1 = std::array<uint8_t, 20>;

// The 20 bytes of a SHA-1 payload digest as CDXJ lines and WARC headers
// write it: base32 (RFC 4648, 32 characters, any case) or hex (40), with or
// without a "sha1:" label. nullopt for anything else (another algorithm).
std::optional<Sha1> DecodeSha1(std::string_view digest) {
  if (ascii::StartsWithIgnoreCase(digest, "sha1:")) digest.remove_prefix(5);
  Sha1 out{};
  if (digest.size() == 32) {
    uint64_t acc = 0;
    int bits = 0;
    size_t n = 0;
    for (char c : digest) {
      const char u = ascii::ToUpper(c);
      int v;
      if (u >= 'A' && u <= 'Z') {
        v = u - 'A';
      } else if (u >= '2' && u <= '7') {
        v = u - '2' + 26;
      } else {
        return std::nullopt;
      }
      acc = (acc << 5) | static_cast<uint64_t>(v);
      bits += 5;
      if (bits >= 8) {
        bits -= 8;
        out[n++] = static_cast<uint8_t>(acc >> bits);
      }
    }
    return out;  // 160 bits exactly: nothing left over
  }
  if (digest.size() == 40) {
    for (size_t i = 0; i < 20; ++i) {
      const int hi = ascii::HexValue(digest[2 * i]);
      const int lo = ascii::HexValue(digest[2 * i + 1]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out[i] = static_cast<uint8_t>(hi * 16 + lo);
    }
    return out;
  }
  return std::nullopt;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

Result<std::unique_ptr<EarlierCaptures>> EarlierCaptures::Load(
    const std::vector<std::string>& sources) {
  std::unique_ptr<EarlierCaptures> e(new EarlierCaptures());
  for (const std::string& source : sources) {
    if (IsDirectory(source)) {
      // A data directory: every index file, in name order (the WARCs'
      // order: their names start with the time they were opened).
      std::vector<std::string> cdxj;
      std::error_code ec;
      for (const auto& entry :
           std::filesystem::directory_iterator(source + "/index", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() > 5 && name.ends_with(".cdxj")) {
          cdxj.push_back(entry.path().string());
        }
      }
      if (ec) {
        return Status::NotFound("dedupe.earlier: " + source +
                                " is a directory without index/ (" +
                                ec.message() + ")");
      }
      std::sort(cdxj.begin(), cdxj.end());
      for (const std::string& f : cdxj) {
        Status st = e->LoadFile(f, source + "/warc");
        if (!st.ok()) return st;
      }
    } else if (IsFile(source)) {
      const size_t slash = source.rfind('/');
      Status st = e->LoadFile(
          source, slash == std::string::npos ? "." : source.substr(0, slash));
      if (!st.ok()) return st;
    } else {
      return Status::NotFound("dedupe.earlier: " + source +
                              " is neither a data directory nor a CDXJ file");
    }
  }
  // By digest; among equal digests the first loaded (lowest file, then
  // offset) wins.
  std::stable_sort(e->slots_.begin(), e->slots_.end(),
                   [](const Slot& a, const Slot& b) {
                     return std::memcmp(a.sha1, b.sha1, 20) < 0;
                   });
  auto last = std::unique(e->slots_.begin(), e->slots_.end(),
                          [](const Slot& a, const Slot& b) {
                            return std::memcmp(a.sha1, b.sha1, 20) == 0;
                          });
  e->slots_.erase(last, e->slots_.end());
  e->slots_.shrink_to_fit();
  e->stats_.captures = e->slots_.size();
  return e;
}

Status EarlierCaptures::LoadFile(const std::string& cdxj,
                                 const std::string& warc_dir) {
  std::ifstream in(cdxj, std::ios::binary);
  if (!in) return Status::IOError("dedupe.earlier: cannot read " + cdxj);
  const auto file = static_cast<uint32_t>(files_.size());
  files_.push_back({cdxj, warc_dir});
  ++stats_.files;
  std::string line;
  uint64_t offset = 0;
  uint64_t number = 0;
  while (std::getline(in, line)) {
    const uint64_t at = offset;
    offset += line.size() + 1;
    ++number;
    if (in.eof()) break;  // a torn last line (no '\n'): a crawl was cut
    ++stats_.lines;
    Result<CdxjEntry> entry = ParseCdxjLine(line);
    std::optional<Sha1> sha1;
    std::string why;
    if (!entry.ok()) {
      why = entry.status().message();
    } else if (entry->revisit || entry->mime == "warc/revisit") {
      ++stats_.revisits;
      continue;
    } else if (entry->digest.empty()) {
      ++stats_.no_digest;
      continue;
    } else if (entry->timestamp.size() < 14) {
      // A revisit names at least the second of its original.
      why = "timestamp '" + entry->timestamp + "' has fewer than 14 digits";
    } else if (sha1 = DecodeSha1(entry->digest); !sha1.has_value()) {
      why = "digest '" + entry->digest + "' is not a SHA-1";
    }
    if (!sha1.has_value()) {
      if (stats_.malformed++ == 0) {
        stats_.first_malformed =
            cdxj + ":" + std::to_string(number) + ": " + why;
      }
      continue;
    }
    Slot s;
    std::memcpy(s.sha1, sha1->data(), 20);
    s.file = file;
    s.offset = at;
    slots_.push_back(s);
  }
  if (in.bad()) return Status::IOError("dedupe.earlier: error reading " + cdxj);
  return Status::Ok();
}

Result<RevisitOf> EarlierCaptures::Find(std::string_view payload_digest) const {
  const std::optional<Sha1> key = DecodeSha1(payload_digest);
  if (!key.has_value()) {
    return Status::InvalidArgument("not a SHA-1 payload digest: " +
                                   std::string(payload_digest));
  }
  auto it = std::lower_bound(slots_.begin(), slots_.end(), *key,
                             [](const Slot& s, const Sha1& k) {
                               return std::memcmp(s.sha1, k.data(), 20) < 0;
                             });
  if (it == slots_.end() || std::memcmp(it->sha1, key->data(), 20) != 0) {
    return Status::NotFound("no earlier capture");
  }
  const File& f = files_[it->file];
  std::ifstream in(f.cdxj, std::ios::binary);
  std::string line;
  if (!in || !in.seekg(static_cast<std::streamoff>(it->offset)) ||
      !std::getline(in, line)) {
    return Status::IOError("dedupe.earlier: cannot read back " + f.cdxj +
                           " at " + std::to_string(it->offset));
  }
  Result<CdxjEntry> entry = ParseCdxjLine(line);
  if (!entry.ok()) {
    return Status::Corruption("dedupe.earlier: " + f.cdxj + " at " +
                              std::to_string(it->offset) +
                              " changed since it was loaded");
  }
  return OriginalFromCdxj(*entry, f.warc_dir);
}

}  // namespace crawld::store

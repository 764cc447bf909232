// Fuzz target for conf/: ParseConfig on arbitrary bytes.
//
// Invariants checked (beyond "no crash, no exception, no sanitizer report"):
//  - a failure is InvalidArgument whose every line starts with
//    "<source>:<line>: " with line >= 1 (or is the "(N more errors)" tail);
//  - a success passes Validate() and survives the round trip:
//    ParseConfig(ToToml(c)) succeeds, equals c, and ToToml is a fixed point.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "conf/conf.h"

namespace {

constexpr std::string_view kSource = "fuzz.toml";

[[noreturn]] void Fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "config_fuzz: %s\n%.*s\n", what,
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void CheckErrorMessage(const crawld::Status& s) {
  if (s.code() != crawld::Status::Code::kInvalidArgument) {
    Fail("error is not InvalidArgument", s.ToString());
  }
  std::string_view msg = s.message();
  size_t start = 0;
  while (start <= msg.size()) {
    size_t end = msg.find('\n', start);
    std::string_view line =
        msg.substr(start, end == std::string_view::npos ? std::string_view::npos
                                                        : end - start);
    if (!(line.starts_with("(") && line.ends_with(" more errors)"))) {
      if (!line.starts_with(kSource) || line.size() < kSource.size() + 4 ||
          line[kSource.size()] != ':' || line[kSource.size() + 1] < '1' ||
          line[kSource.size() + 1] > '9') {
        Fail("error line lacks \"<source>:<line>: \"", msg);
      }
      size_t i = kSource.size() + 1;
      while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
      if (line.substr(i, 2) != ": ") {
        Fail("error line lacks \"<source>:<line>: \"", msg);
      }
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  crawld::Result<crawld::conf::Config> r =
      crawld::conf::ParseConfig(text, kSource);
  if (!r.ok()) {
    CheckErrorMessage(r.status());
    return 0;
  }
  const crawld::conf::Config& config = *r;
  if (config.source != kSource) Fail("source not recorded", config.source);
  if (crawld::Status v = crawld::conf::Validate(config); !v.ok()) {
    Fail("parsed config fails Validate", v.ToString());
  }
  const std::string toml = crawld::conf::ToToml(config);
  crawld::Result<crawld::conf::Config> again =
      crawld::conf::ParseConfig(toml, kSource);
  if (!again.ok())
    Fail("ToToml output does not parse",
         again.status().ToString() + "\n" + toml);
  if (!(*again == config)) Fail("round trip changed the config", toml);
  if (crawld::conf::ToToml(*again) != toml)
    Fail("ToToml is not a fixed point", toml);
  return 0;
}

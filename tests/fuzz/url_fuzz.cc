// Fuzz target for url/: WHATWG parsing, resolution and canonicalization.
//
// Input layout: the bytes up to the first '\n' (if any) are a base, the rest
// the href resolved against it; inputs without '\n' are parsed alone.
// Invariants checked (each a crash on violation, so libFuzzer reports it):
//  - a parsed URL's href re-parses to the same href, with the same
//    components;
//  - Canonicalize never returns Internal (its result always parses);
//  - Canonicalize is idempotent;
//  - a canonical href parses to itself.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "url/url.h"

namespace {

using crawld::Result;
using crawld::Status;
using crawld::url::Canonicalizer;
using crawld::url::Options;
using crawld::url::Parse;
using crawld::url::Url;

[[noreturn]] void Fail(const char* what, std::string_view a,
                       std::string_view b) {
  std::fprintf(stderr,
               "url_fuzz invariant broken: %s\n  a=[%.*s]\n  b=[%.*s]\n", what,
               static_cast<int>(a.size()), a.data(), static_cast<int>(b.size()),
               b.data());
  std::abort();
}

void CheckReparse(const Url& u) {
  Result<Url> again = Parse(u.href());
  if (!again.ok())
    Fail("href does not re-parse", u.href(), again.status().message());
  const Url& v = again.value();
  if (v.href() != u.href()) Fail("href not stable", u.href(), v.href());
  if (v.scheme() != u.scheme() || v.host() != u.host() ||
      v.port() != u.port() || v.path() != u.path() || v.query() != u.query() ||
      v.fragment() != u.fragment() || v.has_query() != u.has_query() ||
      v.has_fragment() != u.has_fragment() ||
      v.has_opaque_path() != u.has_opaque_path()) {
    Fail("components not stable", u.href(), v.href());
  }
  // Components are slices of the href, in order.
  const std::string_view h = u.href();
  if (u.scheme().empty() ||
      h.substr(0, u.scheme().size() + 1) != std::string(u.scheme()) + ":") {
    Fail("scheme not a prefix", h, u.scheme());
  }
  if (u.is_http() && (u.path().empty() || u.path()[0] != '/')) {
    Fail("http path must start with /", h, u.path());
  }
  if (u.is_http() && u.host().empty()) Fail("http without host", h, "");
}

void CheckCanon(const Canonicalizer& canon, const Url& u) {
  Result<Url> c1 = canon.Canonicalize(u);
  if (!c1.ok()) {
    if (c1.status().code() != Status::Code::kInvalidArgument) {
      Fail("canonicalize failed internally", u.href(), c1.status().message());
    }
    return;  // too long
  }
  CheckReparse(c1.value());
  Result<Url> c2 = canon.Canonicalize(c1->href());
  if (!c2.ok())
    Fail("canonical href rejected", c1->href(), c2.status().message());
  if (c2->href() != c1->href()) Fail("not idempotent", c1->href(), c2->href());
  if (canon.options().drop_fragment && c1->has_fragment()) {
    Fail("fragment kept", c1->href(), "");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Canonicalizer kDefault{Options()};
  static const Canonicalizer kSorted = [] {
    Options o;
    o.sort_query_params = true;
    o.drop_fragment = false;
    return Canonicalizer(o);
  }();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  Result<Url> base = Status::InvalidArgument("no base");
  std::string_view href = input;
  if (nl != std::string_view::npos) {
    base = Parse(input.substr(0, nl));
    href = input.substr(nl + 1);
  }
  if (base.ok()) CheckReparse(base.value());
  Result<Url> u = Parse(href, base.ok() ? &base.value() : nullptr);
  if (!u.ok()) {
    if (u.status().code() != Status::Code::kInvalidArgument ||
        u.status().message().empty()) {
      Fail("bad failure status", href, u.status().ToString());
    }
    return 0;
  }
  CheckReparse(u.value());
  CheckCanon(kDefault, u.value());
  CheckCanon(kSorted, u.value());
  return 0;
}

// Crawler canonicalization rules (our own, on top of WHATWG parsing), one
// test per Options field, plus idempotence and the fingerprint.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "url/url.h"

namespace crawld::url {
namespace {

std::string C(const Canonicalizer& c, std::string_view input,
              std::string_view base = {}) {
  Result<Url> b = Status::InvalidArgument("none");
  if (!base.empty()) {
    b = Parse(base);
    if (!b.ok()) return "bad base";
  }
  Result<Url> r = c.Canonicalize(input, b.ok() ? &b.value() : nullptr);
  if (!r.ok()) return "invalid: " + r.status().message();
  return std::string(r->href());
}
std::string C(std::string_view input, std::string_view base = {}) {
  return C(Canonicalizer(Options()), input, base);
}

TEST(CrawldCanon, ResolvesAgainstBaseFirst) {
  EXPECT_EQ(C("../b/./c#x", "http://Example.com/a/z/y"),
            "http://example.com/a/b/c");
}

TEST(CrawldCanon, DropFragment) {
  EXPECT_EQ(C("http://h/a#frag"), "http://h/a");
  EXPECT_EQ(C("http://h/a#"), "http://h/a");
  EXPECT_EQ(C("mailto:x@y#f"), "mailto:x@y");
  // Found by url_fuzz: an opaque path's trailing spaces go with the
  // fragment, as when a browser sets url.hash = "".
  EXPECT_EQ(C("m:a  #f"), "m:a");
  EXPECT_EQ(C("m:a ?q #f"), "m:a ?q%20");
  Options o;
  o.drop_fragment = false;
  EXPECT_EQ(C(Canonicalizer(o), "http://h/a#fr%7eag"), "http://h/a#fr~ag");
}

TEST(CrawldCanon, HostLowercasedAndDefaultPortDropped) {
  EXPECT_EQ(C("HTTP://WWW.EXAMPLE.COM:80/Path"), "http://www.example.com/Path");
  EXPECT_EQ(C("https://Bücher.DE:443/"), "https://xn--bcher-kva.de/");
}

TEST(CrawldCanon, DropTrailingHostDot) {
  EXPECT_EQ(C("http://example.com./a"), "http://example.com/a");
  EXPECT_EQ(C("http://example.com..:8080/"), "http://example.com:8080/");
  EXPECT_EQ(C("http://user@example.com./"), "http://user@example.com/");
  // Found by url_fuzz: without its dots the host would be read as an IPv4
  // number (and "008" fails as one), so the dots stay.
  EXPECT_EQ(C("http://008../"), "http://008../");
  EXPECT_EQ(C("http://a.09../"), "http://a.09../");
  // Found by url_fuzz: a file URL's "localhost" is no host at all, so
  // "localhost." keeps its dot.
  EXPECT_EQ(C("file://localhost./C:/a"), "file://localhost./C:/a");
  EXPECT_EQ(C("file://localhost\uFF61/a"), "file://localhost./a");
  // A host of dots only would become empty: left alone.
  EXPECT_EQ(C("http://./"), "http://./");
  Options o;
  o.drop_trailing_host_dot = false;
  EXPECT_EQ(C(Canonicalizer(o), "http://example.com./a"),
            "http://example.com./a");
}

TEST(CrawldCanon, NormalizePercentEncoding) {
  EXPECT_EQ(C("http://h/%7euser/%41%2d%5F%2E%7E"), "http://h/~user/A-_.~");
  EXPECT_EQ(C("http://h/a%2fb%3a?q=%2b%26%3d%e4"),
            "http://h/a%2Fb%3A?q=%2B%26%3D%E4");
  // Found by url_fuzz: decoding must not complete a stray '%' into a new
  // escape ("%%43e" -> "%Ce" would decode again next time).
  EXPECT_EQ(C("http://h/%%43e/%4%31/%%7e"), "http://h/%%43e/%4%31/%~");
  // Not an escape: left as it is.
  EXPECT_EQ(C("http://h/%zz%4?%"), "http://h/%zz%4?%");
  Options o;
  o.normalize_percent_encoding = false;
  EXPECT_EQ(C(Canonicalizer(o), "http://h/%7euser"), "http://h/%7euser");
}

TEST(CrawldCanon, DropEmptyQuery) {
  EXPECT_EQ(C("http://h/a?"), "http://h/a");
  EXPECT_EQ(C("http://h/a?#f"), "http://h/a");
  EXPECT_EQ(C("http://h/a?&"), "http://h/a?&");  // not empty
  Options o;
  o.drop_empty_query = false;
  EXPECT_EQ(C(Canonicalizer(o), "http://h/a?"), "http://h/a?");
}

TEST(CrawldCanon, StripSessionAndTrackingQueryParams) {
  EXPECT_EQ(C("http://h/p?id=1&PHPSESSID=abc&x=2"), "http://h/p?id=1&x=2");
  EXPECT_EQ(C("http://h/p?utm_source=a&utm_medium=b&q=1&gclid=z&fbclid=y"),
            "http://h/p?q=1");
  EXPECT_EQ(C("http://h/p?sid=1"), "http://h/p");
  EXPECT_EQ(C("http://h/p?jsessionid=1&sessionid=2&SID"), "http://h/p");
  // Only whole names match; prefixes only where the entry ends in '*'.
  EXPECT_EQ(C("http://h/p?sidebar=1&xsid=2&utm=3"),
            "http://h/p?sidebar=1&xsid=2&utm=3");
  // Escaped names are matched after normalization.
  EXPECT_EQ(C("http://h/p?%73id=1&a=b"), "http://h/p?a=b");
  // Empty parameters are kept as they are.
  EXPECT_EQ(C("http://h/p?a=1&&b=2&sid=3"), "http://h/p?a=1&&b=2");
}

TEST(CrawldCanon, StripSessionPathParams) {
  EXPECT_EQ(C("http://h/shop/item;jsessionid=0123ABC?x=1"),
            "http://h/shop/item?x=1");
  EXPECT_EQ(C("http://h/a;JSESSIONID=1;v=2/b;sid=3"), "http://h/a;v=2/b");
  EXPECT_EQ(C("http://h/a;other=1"), "http://h/a;other=1");
  // Found by url_fuzz: a path left starting with "//" on a URL without
  // host keeps the serializer's "/." so it is not read as a host.
  EXPECT_EQ(C("e:/;utm_x/y"), "e:/.//y");
  EXPECT_EQ(C("e:/;utm_x//y"), "e:/.///y");
  EXPECT_EQ(C("web+demo:/.//not-a-host/"), "web+demo:/.//not-a-host/");
  // A segment left as "." after stripping is a dot segment.
  EXPECT_EQ(C("http://h/a/.;jsessionid=1"), "http://h/a/");
}

TEST(CrawldCanon, StripParamsConfigurable) {
  Options o;
  o.strip_params = {"Ref", "trk_*"};
  Canonicalizer c(o);
  EXPECT_EQ(C(c, "http://h/?ref=1&REF=2&trk_a=3&trk=4&sid=5"),
            "http://h/?trk=4&sid=5");
  o.strip_session_params = false;
  EXPECT_EQ(C(Canonicalizer(o), "http://h/x;jsessionid=1?ref=1"),
            "http://h/x;jsessionid=1?ref=1");
}

TEST(CrawldCanon, SortQueryParamsOffByDefault) {
  EXPECT_EQ(C("http://h/?b=1&a=2"), "http://h/?b=1&a=2");
  Options o;
  o.sort_query_params = true;
  Canonicalizer c(o);
  // Stable by key: the two a's keep their order.
  EXPECT_EQ(C(c, "http://h/?b=1&a=2&c&a=1"), "http://h/?a=2&a=1&b=1&c");
  EXPECT_EQ(C(c, "http://h/?b=1&utm_x=1&a=2"), "http://h/?a=2&b=1");
}

TEST(CrawldCanon, MaxLength) {
  Options o;
  o.max_length = 30;
  Canonicalizer c(o);
  EXPECT_EQ(C(c, "http://h/" + std::string(21, 'a')),
            "http://h/" + std::string(21, 'a'));
  EXPECT_EQ(C(c, "http://h/" + std::string(22, 'a')), "invalid: too long");
  // The result counts too: percent-encoding grows the input.
  EXPECT_EQ(C(c, "http://h/" + std::string(8, ' ') + "x"), "invalid: too long");
  // Default 2048 bytes.
  const std::string long_url = "http://h/" + std::string(2040, 'a');
  EXPECT_EQ(C(long_url), "invalid: too long");
  EXPECT_EQ(C(long_url.substr(0, 2048)), long_url.substr(0, 2048));
  // Clamped at construction.
  o.max_length = 0;
  EXPECT_EQ(Canonicalizer(o).options().max_length, 16u);
}

TEST(CrawldCanon, InvalidInputKeepsParseReason) {
  EXPECT_EQ(C("http://exa mple.com/"), "invalid: invalid host");
  EXPECT_EQ(C("/relative"), "invalid: missing scheme");
}

TEST(CrawldCanon, ParsedUrlOverloadMatchesStringOverload) {
  Canonicalizer c{Options()};
  Result<Url> u = Parse("HTTP://H:80/a/./b?sid=1#f");
  ASSERT_TRUE(u.ok());
  Result<Url> a = c.Canonicalize(u.value());
  Result<Url> b = c.Canonicalize("HTTP://H:80/a/./b?sid=1#f");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->href(), "http://h/a/b");
  EXPECT_EQ(a->href(), b->href());
  EXPECT_EQ(a->path_and_query(), "/a/b");
}

TEST(CrawldCanon, Idempotent) {
  Options sorted;
  sorted.sort_query_params = true;
  const Canonicalizer canons[] = {Canonicalizer(Options()),
                                  Canonicalizer(sorted)};
  const std::vector<std::string> inputs = {
      "HTTP://Example.COM.:80/a/%7e/../b;jsessionid=1?utm_x=1&b=%2a&a#f",
      "http://h/a/.;sid=1/b?",
      "http://h/%2e%2e;sid=1/x",
      "http://h/%zz?%4g=1&&",
      "mailto:X@Y?subject=a b#f",
      "http://[::FFFF:1.2.3.4]:8080/?z&y&x",
      "https://xn--bcher-kva.de/ü?ü=ü",
      "foo://h/a/../b;sid=2",
      "http://h/p?sid&a=1",
  };
  for (const Canonicalizer& c : canons) {
    for (const std::string& in : inputs) {
      Result<Url> once = c.Canonicalize(in);
      ASSERT_TRUE(once.ok()) << in;
      Result<Url> twice = c.Canonicalize(once->href());
      ASSERT_TRUE(twice.ok()) << in;
      EXPECT_EQ(once->href(), twice->href()) << in;
    }
  }
}

TEST(CrawldCanon, Fingerprint_IsXxh3OfTheHref) {
  // Reference value of XXH3_64bits("") from the xxHash test vectors.
  EXPECT_EQ(Fingerprint(""), 0x2D06800538D394C2ull);
  // Pinned: dedupe stores these on disk, so they must never change.
  EXPECT_EQ(Fingerprint("https://example.com/"), 0x4ca4ca394042ccebull);
  EXPECT_EQ(Fingerprint("http://example.com/a?b=1"), 0xd6861b95ff485b23ull);
}

TEST(CrawldCanon, Fingerprint_EqualForEquivalentUrls) {
  Canonicalizer c{Options()};
  Result<Url> a = c.Canonicalize("HTTP://Example.com:80/a/../b?sid=9#x");
  Result<Url> b = c.Canonicalize("http://example.com./b");
  Result<Url> d = c.Canonicalize("http://example.com/b?x");
  ASSERT_TRUE(a.ok() && b.ok() && d.ok());
  EXPECT_EQ(Fingerprint(a->href()), Fingerprint(b->href()));
  EXPECT_NE(Fingerprint(a->href()), Fingerprint(d->href()));
}

}  // namespace
}  // namespace crawld::url

// Tests of sitemap/: the sitemaps.org protocol, section by section
// (https://www.sitemaps.org/protocol.html), RSS 2.0 and Atom 1.0 as link
// sources, gzip, the bounds, hostile XML, and the streaming API. Our own
// choices carry the CrawldOnly prefix.
#include "sitemap/sitemap.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "url/url.h"

namespace crawld::sitemap {
namespace {

constexpr std::string_view kNs =
    "xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"";

url::Url U(std::string_view s) {
  Result<url::Url> u = url::Parse(s);
  EXPECT_TRUE(u.ok()) << s;
  return u.ok() ? *u : url::Url();
}

std::string Urlset(std::string_view body) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset " +
         std::string(kNs) + ">\n" + std::string(body) + "</urlset>\n";
}

std::string UrlEntry(std::string_view loc) {
  return "<url><loc>" + std::string(loc) + "</loc></url>\n";
}

Contents ReadAt(std::string_view body, std::string_view sitemap_url,
                const std::vector<std::string>& hosts = {},
                const Options& options = {}) {
  return Read(body, U(sitemap_url), hosts, options);
}

Contents ReadRoot(std::string_view body, const Options& options = {}) {
  return ReadAt(body, "http://www.example.com/sitemap.xml", {}, options);
}

std::vector<std::string> Urls(const Contents& c) {
  std::vector<std::string> out;
  for (const Entry& e : c.entries) out.push_back(e.url);
  return out;
}

// A gzip member of `data` (zlib's gzip wrapper, level 9).
std::string Gzip(std::string_view data) {
  z_stream zs{};
  EXPECT_EQ(
      deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY),
      Z_OK);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Every entry is counted once: admitted or under one drop reason.
void ExpectBalanced(const Contents& c) {
  const Counters& k = c.report.counters;
  EXPECT_EQ(k.entries, k.admitted + k.dropped());
  EXPECT_EQ(k.admitted, c.entries.size());
}

// ---------------------------------------------------------------------
// "XML tag definitions"
// https://www.sitemaps.org/protocol.html#xmlTagDefinitions

TEST(Sitemaps, XmlTagDefinitions_UrlsetWithEveryTag) {
  const Contents c = ReadRoot(Urlset(
      "<url><loc>http://www.example.com/</loc>"
      "<lastmod>2005-01-01</lastmod><changefreq>monthly</changefreq>"
      "<priority>0.8</priority></url>"
      "<url><loc>http://www.example.com/catalog?item=12&amp;desc=vacation_"
      "hawaii</loc><changefreq>weekly</changefreq></url>"));
  ASSERT_TRUE(c.report.error.ok()) << c.report.error.ToString();
  EXPECT_EQ(c.report.format, Format::kUrlset);
  ASSERT_EQ(c.entries.size(), 2u);
  const Entry& a = c.entries[0];
  EXPECT_EQ(a.url, "http://www.example.com/");
  EXPECT_EQ(a.kind, EntryKind::kPage);
  EXPECT_EQ(a.lastmod, 1104537600);  // 2005-01-01T00:00:00Z
  EXPECT_EQ(a.changefreq, ChangeFreq::kMonthly);
  EXPECT_DOUBLE_EQ(a.priority, 0.8);
  const Entry& b = c.entries[1];
  EXPECT_EQ(b.url,
            "http://www.example.com/catalog?item=12&desc=vacation_hawaii");
  EXPECT_FALSE(b.lastmod.has_value());
  EXPECT_EQ(b.changefreq, ChangeFreq::kWeekly);
  EXPECT_DOUBLE_EQ(b.priority, kDefaultPriority);
  EXPECT_EQ(c.report.counters.entries, 2u);
  EXPECT_EQ(c.report.counters.admitted, 2u);
  ExpectBalanced(c);
}

TEST(Sitemaps, XmlTagDefinitions_LocIsRequired) {
  const Contents c =
      ReadRoot(Urlset("<url><lastmod>2005-01-01</lastmod></url>"
                      "<url><loc>   </loc></url>" +
                      UrlEntry("http://www.example.com/a")));
  EXPECT_EQ(Urls(c), std::vector<std::string>{"http://www.example.com/a"});
  EXPECT_EQ(c.report.counters.no_loc, 2u);
  EXPECT_TRUE(c.report.error.ok());
  ExpectBalanced(c);
}

TEST(Sitemaps, XmlTagDefinitions_LocMustBeAbsoluteAndIsTrimmed) {
  const Contents c = ReadRoot(Urlset(
      UrlEntry("\n    http://www.example.com/x\n  ") + UrlEntry("/relative") +
      UrlEntry("http://[bad") + UrlEntry("mailto:a@example.com") +
      "<url><loc><![CDATA[http://www.example.com/c?a=1&b=2]]></loc></url>"));
  EXPECT_EQ(Urls(c),
            (std::vector<std::string>{"http://www.example.com/x",
                                      "http://www.example.com/c?a=1&b=2"}));
  EXPECT_EQ(c.report.counters.invalid_url, 2u);
  EXPECT_EQ(c.report.counters.not_http, 1u);
  ExpectBalanced(c);
}

TEST(Sitemaps, XmlTagDefinitions_LocOfAtLeast2048BytesIsCountedNotFatal) {
  const std::string base = "http://www.example.com/";
  const std::string ok = base + std::string(2048 - base.size(), 'a');
  const std::string longer = ok + "b";
  const Contents c = ReadRoot(
      Urlset(UrlEntry(longer) + UrlEntry(ok) + UrlEntry(base + "after")));
  EXPECT_EQ(Urls(c), (std::vector<std::string>{ok, base + "after"}));
  EXPECT_EQ(c.report.counters.too_long, 1u);
  EXPECT_TRUE(c.report.error.ok());
  ExpectBalanced(c);
}

TEST(Sitemaps, XmlTagDefinitions_LastmodInW3cDatetimeForms) {
  const Contents c = ReadRoot(Urlset(
      "<url><loc>http://www.example.com/1</loc><lastmod>2004</lastmod></url>"
      "<url><loc>http://www.example.com/2</loc><lastmod>2004-12</lastmod>"
      "</url>"
      "<url><loc>http://www.example.com/3</loc><lastmod>2004-12-23</lastmod>"
      "</url>"
      "<url><loc>http://www.example.com/4</loc>"
      "<lastmod>2004-12-23T18:00+01:00</lastmod></url>"
      "<url><loc>http://www.example.com/5</loc>"
      "<lastmod>2004-12-23T18:00:15Z</lastmod></url>"
      "<url><loc>http://www.example.com/6</loc>"
      "<lastmod>2004-12-23T18:00:15.25-05:30</lastmod></url>"));
  ASSERT_EQ(c.entries.size(), 6u);
  EXPECT_EQ(c.entries[0].lastmod, 1072915200);  // 2004-01-01
  EXPECT_EQ(c.entries[1].lastmod, 1101859200);  // 2004-12-01
  EXPECT_EQ(c.entries[2].lastmod, 1103760000);  // 2004-12-23
  EXPECT_EQ(c.entries[3].lastmod, 1103760000 + 17 * 3600);
  EXPECT_EQ(c.entries[4].lastmod, 1103760000 + 18 * 3600 + 15);
  EXPECT_EQ(c.entries[5].lastmod, 1103760000 + 23 * 3600 + 30 * 60 + 15);
  EXPECT_EQ(c.report.counters.bad_lastmod, 0u);
}

TEST(Sitemaps, XmlTagDefinitions_UnreadableLastmodIsUnsetAndCounted) {
  const Contents c = ReadRoot(Urlset(
      "<url><loc>http://www.example.com/1</loc><lastmod>yesterday</lastmod>"
      "</url>"
      "<url><loc>http://www.example.com/2</loc><lastmod>2004-02-30</lastmod>"
      "</url>"
      "<url><loc>http://www.example.com/3</loc>"
      "<lastmod>2004-12-23T25:00Z</lastmod></url>"));
  ASSERT_EQ(c.entries.size(), 3u);
  for (const Entry& e : c.entries) EXPECT_FALSE(e.lastmod.has_value());
  EXPECT_EQ(c.report.counters.bad_lastmod, 3u);
  EXPECT_EQ(c.report.counters.admitted, 3u);
}

TEST(Sitemaps, XmlTagDefinitions_ChangefreqValues) {
  const char* kValues[] = {"always", "hourly", "daily",   "weekly",   "monthly",
                           "yearly", "never",  " Daily ", "sometimes"};
  std::string body;
  for (const char* v : kValues) {
    body += "<url><loc>http://www.example.com/</loc><changefreq>" +
            std::string(v) + "</changefreq></url>";
  }
  const Contents c = ReadRoot(Urlset(body));
  ASSERT_EQ(c.entries.size(), 9u);
  const ChangeFreq want[] = {
      ChangeFreq::kAlways, ChangeFreq::kHourly,  ChangeFreq::kDaily,
      ChangeFreq::kWeekly, ChangeFreq::kMonthly, ChangeFreq::kYearly,
      ChangeFreq::kNever,  ChangeFreq::kDaily,   ChangeFreq::kUnset};
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_EQ(c.entries[i].changefreq, want[i]) << kValues[i];
  }
  EXPECT_EQ(c.report.counters.bad_changefreq, 1u);
}

TEST(Sitemaps, XmlTagDefinitions_PriorityDefaultsTo0_5AndIsClamped) {
  const char* kValues[] = {"0.0",  "1.0",  "1",   ".3",  "1.5",
                           "-0.2", "high", "nan", "+0.4"};
  std::string body = UrlEntry("http://www.example.com/none");
  for (const char* v : kValues) {
    body += "<url><loc>http://www.example.com/</loc><priority>" +
            std::string(v) + "</priority></url>";
  }
  const Contents c = ReadRoot(Urlset(body));
  ASSERT_EQ(c.entries.size(), 10u);
  const double want[] = {0.5, 0.0, 1.0, 1.0, 0.3, 1.0, 0.0, 0.5, 0.5, 0.5};
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_DOUBLE_EQ(c.entries[i].priority, want[i]) << i;
  }
  EXPECT_EQ(c.report.counters.clamped_priority, 2u);
  EXPECT_EQ(c.report.counters.bad_priority, 3u);
}

// "Entity escaping": the escapes are decoded; URLs stay as written.
TEST(Sitemaps, EntityEscaping_PredefinedAndCharacterReferences) {
  const Contents c = ReadRoot(
      Urlset(UrlEntry("http://www.example.com/q?a=1&amp;b=&#39;x&#39;&gt;"
                      "&#x26;c")));
  ASSERT_EQ(c.entries.size(), 1u) << c.report.error.ToString();
  EXPECT_EQ(c.entries[0].url, "http://www.example.com/q?a=1&b=%27x%27%3E&c");
}

// Extensions (image, video, news, xhtml:link) live in other namespaces:
// their loc is not the page's.
TEST(Sitemaps, XmlFormat_ExtensionNamespacesAreIgnored) {
  const Contents c = ReadRoot(
      "<urlset " + std::string(kNs) +
      " xmlns:image=\"http://www.google.com/schemas/sitemap-image/1.1\">"
      "<url><image:image><image:loc>http://www.example.com/i.jpg</image:loc>"
      "</image:image><loc>http://www.example.com/page</loc></url>"
      "<url><image:loc>http://www.example.com/only-image.jpg</image:loc>"
      "</url></urlset>");
  EXPECT_EQ(Urls(c), std::vector<std::string>{"http://www.example.com/page"});
  EXPECT_EQ(c.report.counters.no_loc, 1u);
}

// ---------------------------------------------------------------------
// "Using Sitemap index files"
// https://www.sitemaps.org/protocol.html#index

TEST(Sitemaps, SitemapIndex_ChildSitemapsWithLastmod) {
  const Contents c =
      ReadRoot("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex " +
               std::string(kNs) +
               ">"
               "<sitemap><loc>http://www.example.com/sitemap1.xml.gz</loc>"
               "<lastmod>2004-10-01T18:23:17+00:00</lastmod></sitemap>"
               "<sitemap><loc>http://www.example.com/sitemap2.xml.gz</loc>"
               "<priority>0.9</priority></sitemap>"
               "<url><loc>http://www.example.com/not-in-an-index</loc></url>"
               "</sitemapindex>");
  EXPECT_EQ(c.report.format, Format::kSitemapIndex);
  ASSERT_EQ(c.entries.size(), 2u);
  EXPECT_EQ(c.entries[0].kind, EntryKind::kSitemap);
  EXPECT_EQ(c.entries[0].url, "http://www.example.com/sitemap1.xml.gz");
  EXPECT_EQ(c.entries[0].lastmod, 1096655000 - 3);  // 2004-10-01T18:23:17Z
  EXPECT_EQ(c.entries[1].kind, EntryKind::kSitemap);
  EXPECT_DOUBLE_EQ(c.entries[1].priority, kDefaultPriority);
  ExpectBalanced(c);
}

TEST(Sitemaps, SitemapIndex_ChildOnAnotherHostIsRejected) {
  const Contents c = ReadRoot(
      "<sitemapindex " + std::string(kNs) +
      "><sitemap><loc>http://other.example.net/sitemap.xml</loc></sitemap>"
      "</sitemapindex>");
  EXPECT_TRUE(c.entries.empty());
  EXPECT_EQ(c.report.counters.other_origin, 1u);
}

// ---------------------------------------------------------------------
// "Sitemap file location"
// https://www.sitemaps.org/protocol.html#location

TEST(Sitemaps, FileLocation_UrlOutsideThePathIsRejected) {
  const Contents c =
      ReadAt(Urlset(UrlEntry("http://example.com/catalog/show?item=23") +
                    UrlEntry("http://example.com/catalog/") +
                    UrlEntry("http://example.com/image/show?item=23") +
                    UrlEntry("http://example.com/catalogue") +
                    UrlEntry("http://example.com/")),
             "http://example.com/catalog/sitemap.xml");
  EXPECT_EQ(Urls(c),
            (std::vector<std::string>{"http://example.com/catalog/show?item=23",
                                      "http://example.com/catalog/"}));
  EXPECT_EQ(c.report.counters.outside_path, 3u);
  ExpectBalanced(c);
}

TEST(Sitemaps, FileLocation_OtherSchemeHostOrPortIsRejected) {
  const Contents c = ReadAt(Urlset(UrlEntry("http://example.com/a") +
                                   UrlEntry("https://example.com/b") +
                                   UrlEntry("http://www.example.com/c") +
                                   UrlEntry("http://example.com:8080/d") +
                                   UrlEntry("http://EXAMPLE.com:80/e")),
                            "http://example.com/sitemap.xml");
  EXPECT_EQ(Urls(c), (std::vector<std::string>{"http://example.com/a",
                                               "http://example.com/e"}));
  EXPECT_EQ(c.report.counters.other_origin, 3u);
}

TEST(Sitemaps, FileLocation_RootSitemapAdmitsTheWholeHost) {
  const Contents c = ReadAt(Urlset(UrlEntry("https://example.com/a/b/c") +
                                   UrlEntry("https://example.com/")),
                            "https://example.com/sitemap.xml?lang=en");
  EXPECT_EQ(c.entries.size(), 2u);
}

TEST(Sitemaps, FileLocation_EnforceScopeOffAdmitsAnyHttpUrl) {
  Options o;
  o.enforce_scope = false;
  const Contents c = ReadAt(
      Urlset(UrlEntry("https://other.net/x") + UrlEntry("ftp://example.com/y")),
      "http://example.com/sub/sitemap.xml", {}, o);
  EXPECT_EQ(Urls(c), std::vector<std::string>{"https://other.net/x"});
  EXPECT_EQ(c.report.counters.not_http, 1u);
}

// ---------------------------------------------------------------------
// "Sitemaps & Cross Submits"
// https://www.sitemaps.org/protocol.html#sitemaps_cross_submits

TEST(Sitemaps, CrossSubmit_RobotsTxtAdmitsOtherHost) {
  // http://www.host1.com/robots.txt says
  // "Sitemap: http://www.sitemaphost.com/sitemap-host1.xml".
  const Contents c =
      ReadAt(Urlset(UrlEntry("http://www.host1.com/anywhere/page.html") +
                    UrlEntry("https://WWW.HOST1.COM:8443/x") +
                    UrlEntry("http://www.host2.com/page.html")),
             "http://www.sitemaphost.com/sitemaps/sitemap-host1.xml",
             {"www.host1.com"});
  EXPECT_EQ(Urls(c),
            (std::vector<std::string>{"http://www.host1.com/anywhere/page.html",
                                      "https://www.host1.com:8443/x"}));
  EXPECT_EQ(c.report.counters.other_origin, 1u);
}

TEST(Sitemaps, CrossSubmit_OwnRobotsTxtLiftsThePathRule) {
  const Contents c =
      ReadAt(Urlset(UrlEntry("http://example.com/elsewhere")),
             "http://example.com/sitemaps/a.xml", {"Example.COM"});
  EXPECT_EQ(c.entries.size(), 1u);
}

TEST(Sitemaps, CrossSubmit_HostsAreComparedAfterIdnaProcessing) {
  const Contents c = ReadAt(Urlset(UrlEntry("http://xn--bcher-kva.de/x")),
                            "http://sitemaps.example/s.xml", {"BÜCHER.de"});
  EXPECT_EQ(c.entries.size(), 1u);
}

// ---------------------------------------------------------------------
// "Sitemap file location"/"Sitemap index" limits: 50,000 URLs, 50 MB.

TEST(Sitemaps, Limits_50001UrlsKeep50000AndCountOne) {
  std::string body;
  body.reserve(50001 * 48);
  for (int i = 0; i < 50001; ++i) {
    body += UrlEntry("http://www.example.com/p/" + std::to_string(i));
  }
  const Contents c = ReadRoot(Urlset(body));
  ASSERT_EQ(c.entries.size(), 50000u);
  EXPECT_EQ(c.entries.back().url, "http://www.example.com/p/49999");
  EXPECT_EQ(c.report.counters.entries, 50001u);
  EXPECT_EQ(c.report.counters.over_limit, 1u);
  EXPECT_TRUE(c.report.error.ok());
  ExpectBalanced(c);
}

TEST(Sitemaps, Limits_MaxUrlsIsConfigurable) {
  Options o;
  o.max_urls = 2;
  const Contents c =
      ReadRoot(Urlset(UrlEntry("http://www.example.com/1") +
                      UrlEntry("http://www.example.com/2") + "<url></url>" +
                      UrlEntry("http://www.example.com/3")),
               o);
  EXPECT_EQ(c.entries.size(), 2u);
  EXPECT_EQ(c.report.counters.over_limit, 2u);
  ExpectBalanced(c);
}

TEST(Sitemaps, Limits_UncompressedSizeCapCutsAndDropsTheCutEntry) {
  Options o;
  o.max_uncompressed_bytes = 4096;
  std::string body;
  for (int i = 0; i < 200; ++i) {
    body += UrlEntry("http://www.example.com/" + std::to_string(i));
  }
  const std::string xml = Urlset(body);
  const Contents c = ReadRoot(xml, o);
  EXPECT_TRUE(c.report.truncated);
  EXPECT_EQ(c.report.error.code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(c.report.counters.bytes_out, 4096u);
  EXPECT_EQ(c.report.counters.bytes_in, xml.size());
  // Every entry closed before the cut, and none after it.
  size_t closed = 0;
  for (size_t at = xml.find("</url>");
       at != std::string::npos && at + 6 <= 4096;
       at = xml.find("</url>", at + 1)) {
    ++closed;
  }
  ASSERT_GT(closed, 10u);
  EXPECT_EQ(c.entries.size(), closed);
  ExpectBalanced(c);
}

TEST(Sitemaps, CrawldOnly_OptionsAreSanitized) {
  Options o;
  o.max_urls = 0;
  o.max_uncompressed_bytes = 1;
  o.max_loc_bytes = 0;
  Reader r(U("http://example.com/s.xml"), {}, o);
  EXPECT_EQ(r.options().max_urls, 1u);
  EXPECT_EQ(r.options().max_uncompressed_bytes, 1024u);
  EXPECT_EQ(r.options().max_loc_bytes, 16u);
  o.max_urls = size_t{1} << 40;
  o.max_uncompressed_bytes = size_t{1} << 40;
  o.max_loc_bytes = size_t{1} << 40;
  Reader big(U("http://example.com/s.xml"), {}, o);
  EXPECT_EQ(big.options().max_urls, 10'000'000u);
  EXPECT_EQ(big.options().max_uncompressed_bytes, size_t{1} << 30);
  EXPECT_EQ(big.options().max_loc_bytes, size_t{1} << 20);
}

// ---------------------------------------------------------------------
// gzip ("You can compress your Sitemap files using gzip"): by magic bytes.

TEST(Sitemaps, Gzip_DetectedByMagicBytesNotByName) {
  const std::string xml = Urlset(UrlEntry("http://www.example.com/z"));
  const Contents c =
      ReadAt(Gzip(xml), "http://www.example.com/sitemap.xml");  // no .gz
  EXPECT_TRUE(c.report.gzip);
  EXPECT_EQ(Urls(c), std::vector<std::string>{"http://www.example.com/z"});
  EXPECT_EQ(c.report.counters.bytes_out, xml.size());
  const Contents plain = ReadAt(xml, "http://www.example.com/sitemap.xml.gz");
  EXPECT_FALSE(plain.report.gzip);
  EXPECT_EQ(plain.entries.size(), 1u);
}

// Feeds `gz` in 512-byte pieces, as a transfer would, until Feed says
// stop; returns how many bytes were fed.
size_t FeedUntilStopped(Reader* r, std::string_view gz) {
  size_t fed = 0;
  while (fed < gz.size()) {
    const std::string_view piece = gz.substr(fed, 512);
    fed += piece.size();
    if (!r->Feed(piece)) break;
  }
  return fed;
}

TEST(Sitemaps, Gzip_BombIsCutAtTheCapNotInflated) {
  // 8 MiB deflate to ~8 KiB; with a 64 KiB cap, at most one more inflate
  // buffer (64 KiB) is ever produced, whatever the bomb expands to.
  const std::string blanks = Gzip(std::string(8 << 20, ' '));
  std::string entries = "<urlset>";
  while (entries.size() < (8u << 20)) entries += "<url></url>";
  const std::string urlset = Gzip(entries);
  for (const std::string* bomb : {&blanks, &urlset}) {
    ASSERT_LT(bomb->size(), 64u << 10);
    Options o;
    o.max_uncompressed_bytes = 64 << 10;
    Reader r(U("http://www.example.com/sitemap.xml.gz"), {}, o);
    const size_t fed = FeedUntilStopped(&r, *bomb);
    EXPECT_LT(fed, bomb->size());  // the caller may abort the transfer here
    const Report& rep = r.Finish();
    EXPECT_TRUE(rep.gzip);
    EXPECT_TRUE(rep.truncated);
    EXPECT_EQ(rep.error.code(), Status::Code::kResourceExhausted);
    EXPECT_EQ(rep.counters.bytes_out, 64u << 10);
    EXPECT_EQ(rep.counters.bytes_in, fed);
  }
}

TEST(Sitemaps, Gzip_BombOfZerosStopsAtTheFirstXmlError) {
  // A NUL first byte reads as UTF-16 XML, which expat refuses at once: the
  // reading stops after the first inflate buffer.
  const std::string bomb = Gzip(std::string(8 << 20, '\0'));
  Reader r(U("http://www.example.com/sitemap.xml.gz"), {});
  const size_t fed = FeedUntilStopped(&r, bomb);
  EXPECT_LT(fed, bomb.size());
  const Report& rep = r.Finish();
  EXPECT_EQ(rep.error.code(), Status::Code::kCorruption);
  EXPECT_LE(rep.counters.bytes_out, 64u << 10);
}

TEST(Sitemaps, Gzip_CorruptStreamKeepsWhatWasRead) {
  std::string body;
  for (int i = 0; i < 3000; ++i) {
    body += UrlEntry("http://www.example.com/" + std::to_string(i * 7919));
  }
  const std::string gz = Gzip(Urlset(body));
  // A wrong CRC-32 in the trailer: every entry was read before the check.
  std::string bad_crc = gz;
  bad_crc[gz.size() - 8] = static_cast<char>(~bad_crc[gz.size() - 8]);
  const Contents c = ReadRoot(bad_crc);
  EXPECT_EQ(c.report.error.code(), Status::Code::kCorruption);
  EXPECT_EQ(c.report.error.message(), "gzip: incorrect data check");
  EXPECT_EQ(c.entries.size(), 3000u);
  // Damage in the middle: what came before it is kept.
  std::string bad_data = gz;
  const size_t half = gz.size() / 2;
  for (size_t i = half; i < half + 64; ++i) {
    bad_data[i] = static_cast<char>(~bad_data[i]);
  }
  const Contents d = ReadRoot(bad_data);
  EXPECT_EQ(d.report.error.code(), Status::Code::kCorruption)
      << d.report.error.ToString();
  EXPECT_GT(d.entries.size(), 0u);
  EXPECT_LT(d.entries.size(), 3000u);
}

TEST(Sitemaps, Gzip_CutShortIsAnError) {
  const std::string gz = Gzip(Urlset(UrlEntry("http://www.example.com/a")));
  const Contents c = ReadRoot(gz.substr(0, gz.size() - 4));
  EXPECT_EQ(c.report.error.code(), Status::Code::kCorruption);
  EXPECT_EQ(c.report.error.message(), "gzip: unexpected end of data");
}

TEST(Sitemaps, Gzip_ConcatenatedMembersAreOneFile) {
  const std::string xml = Urlset(UrlEntry("http://www.example.com/a") +
                                 UrlEntry("http://www.example.com/b"));
  const size_t cut = xml.find("<url>", xml.find("</url>"));
  const Contents c = ReadRoot(Gzip(xml.substr(0, cut)) + Gzip(xml.substr(cut)));
  EXPECT_TRUE(c.report.error.ok()) << c.report.error.ToString();
  EXPECT_EQ(c.entries.size(), 2u);
}

// Found by sitemap_fuzz: after trailing garbage, a later read that starts
// with the gzip magic is garbage too, as it is when the buffer is whole.
TEST(Sitemaps, Gzip_GarbageAfterAMemberStaysGarbageAtAnySplit) {
  const std::string xml = Urlset(UrlEntry("http://www.example.com/a"));
  const std::string input = Gzip(xml) + std::string(9, '\0') +
                            Gzip(Urlset(UrlEntry("http://www.example.com/b")));
  const Contents whole = ReadRoot(input);
  EXPECT_TRUE(whole.report.error.ok()) << whole.report.error.ToString();
  EXPECT_EQ(Urls(whole), std::vector<std::string>{"http://www.example.com/a"});
  for (size_t cut = 1; cut < input.size(); ++cut) {
    Reader r(U("http://www.example.com/sitemap.xml"), {});
    r.Feed(std::string_view(input).substr(0, cut));
    r.Feed(std::string_view(input).substr(cut));
    const Report& rep = r.Finish();
    std::vector<Entry> got;
    r.TakeEntries(&got);
    EXPECT_EQ(got.size(), 1u) << cut;
    EXPECT_TRUE(rep.error.ok()) << cut << ": " << rep.error.ToString();
  }
}

// ---------------------------------------------------------------------
// Malformed XML: what was read is kept, the error has line:column.

TEST(Sitemaps, Malformed_KeepsEntriesBeforeTheErrorWithLineAndColumn) {
  const std::string xml =
      "<?xml version=\"1.0\"?>\n"
      "<urlset " +
      std::string(kNs) +
      ">\n"
      "<url><loc>http://www.example.com/1</loc></url>\n"
      "<url><loc>http://www.example.com/2</loc></url>\n"
      "<url><loc>http://www.example.com/3</loc></urll>\n"
      "<url><loc>http://www.example.com/4</loc></url>\n"
      "</urlset>\n";
  const Contents c = ReadRoot(xml);
  EXPECT_EQ(Urls(c), (std::vector<std::string>{"http://www.example.com/1",
                                               "http://www.example.com/2"}));
  EXPECT_EQ(c.report.error.code(), Status::Code::kCorruption);
  EXPECT_EQ(c.report.error_line, 5u);
  EXPECT_EQ(c.report.error_column, 43u);  // the name in "</urll>"
  EXPECT_EQ(c.report.error.message(), "line 5, column 43: mismatched tag");
}

TEST(Sitemaps, Malformed_UnclosedDocumentIsReportedAtTheEnd) {
  const Contents c =
      ReadRoot("<urlset " + std::string(kNs) + ">" +
               UrlEntry("http://www.example.com/1") + "<url><loc>http://www");
  EXPECT_EQ(c.entries.size(), 1u);
  EXPECT_EQ(c.report.error.code(), Status::Code::kCorruption);
  EXPECT_EQ(c.report.error_line, 2u);
}

// Found by sitemap_fuzz: expat calls junk after the root "invalid token"
// at one column when it has the whole, and "junk after document element"
// one column earlier when a read ends right after the junk's first byte.
// The entries are all inside the root, so the reader stops there, and the
// report is the same however the network split the bytes.
TEST(Sitemaps, Malformed_JunkAfterTheRootIsNotReadAtAnySplit) {
  const std::string xml = Urlset(UrlEntry("http://www.example.com/1") +
                                 UrlEntry("http://www.example.com/2")) +
                          "y</ur n<lae/urlset\"\"\"";
  const Contents whole = ReadRoot(xml);
  EXPECT_EQ(Urls(whole),
            (std::vector<std::string>{"http://www.example.com/1",
                                      "http://www.example.com/2"}));
  EXPECT_TRUE(whole.report.error.ok()) << whole.report.error.ToString();
  EXPECT_EQ(whole.report.counters.bytes_out, xml.size());
  for (size_t cut = 1; cut < xml.size(); ++cut) {
    Reader r(U("http://www.example.com/sitemap.xml"), {});
    r.Feed(std::string_view(xml).substr(0, cut));
    r.Feed(std::string_view(xml).substr(cut));
    const Report& rep = r.Finish();
    std::vector<Entry> got;
    r.TakeEntries(&got);
    EXPECT_EQ(got.size(), 2u) << cut;
    EXPECT_TRUE(rep.error.ok()) << cut << ": " << rep.error.ToString();
    EXPECT_EQ(rep.counters.bytes_out, xml.size()) << cut;
  }
}

TEST(Sitemaps, Malformed_AnHtmlPageIsNotASitemap) {
  const Contents c = ReadRoot(
      "<!DOCTYPE html>\n<html><body><a href=\"http://www.example.com/\">x</a>"
      "</body></html>");
  EXPECT_TRUE(c.entries.empty());
  EXPECT_EQ(c.report.error.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(c.report.error.message(),
            "line 2, column 1: root element <html> is not urlset, "
            "sitemapindex, rss or feed");
}

// ---------------------------------------------------------------------
// Hostile XML: no entity is ever declared or expanded, nothing external
// is read.

TEST(Sitemaps, Security_EntityExpansionIsRefused) {
  // "Billion laughs": 10 levels of 10 references, 10^10 "lol"s.
  std::string dtd = "<!DOCTYPE urlset [\n<!ENTITY lol0 \"lol\">\n";
  for (int i = 1; i < 10; ++i) {
    dtd += "<!ENTITY lol" + std::to_string(i) + " \"";
    for (int k = 0; k < 10; ++k) dtd += "&lol" + std::to_string(i - 1) + ";";
    dtd += "\">\n";
  }
  dtd += "]>\n";
  const Contents c = ReadRoot(
      "<?xml version=\"1.0\"?>\n" + dtd + "<urlset " + std::string(kNs) +
      "><url><loc>http://www.example.com/&lol9;" + "</loc></url></urlset>");
  EXPECT_TRUE(c.entries.empty());
  EXPECT_EQ(c.report.error.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(c.report.error_line, 3u);
  EXPECT_NE(c.report.error.message().find("<!ENTITY lol0> refused"),
            std::string::npos)
      << c.report.error.ToString();
}

TEST(Sitemaps, Security_ExternalEntitiesAreNeverRead) {
  // An external entity declaration is refused like any other.
  const Contents xxe = ReadRoot(
      "<?xml version=\"1.0\"?>\n<!DOCTYPE urlset [<!ENTITY x SYSTEM "
      "\"file:///etc/passwd\">]>\n<urlset " +
      std::string(kNs) +
      "><url><loc>http://www.example.com/&x;</loc></url>"
      "</urlset>");
  EXPECT_TRUE(xxe.entries.empty());
  EXPECT_EQ(xxe.report.error.code(), Status::Code::kInvalidArgument);
  // An external DTD is not fetched: its entities stay unknown, the loc
  // holds no file content.
  const Contents dtd = ReadRoot(
      "<?xml version=\"1.0\"?>\n<!DOCTYPE urlset SYSTEM "
      "\"file:///etc/passwd\">\n<urlset " +
      std::string(kNs) +
      "><url><loc>http://www.example.com/a&x;b</loc></url></urlset>");
  for (const Entry& e : dtd.entries) {
    EXPECT_EQ(e.url.find("root"), std::string::npos) << e.url;
  }
}

// ---------------------------------------------------------------------
// "Other Sitemap formats"
// https://www.sitemaps.org/protocol.html#otherformats

TEST(Sitemaps, OtherFormats_Rss20ItemLinkAndPubDate) {
  const Contents c = ReadAt(
      "<?xml version=\"1.0\"?>\n<rss version=\"2.0\" "
      "xmlns:atom=\"http://www.w3.org/2005/Atom\"><channel>"
      "<title>t</title><link>http://www.example.com/</link>"
      "<atom:link href=\"http://www.example.com/feed\" rel=\"self\"/>"
      "<item><title>a</title><link>http://www.example.com/news/a.html</link>"
      "<pubDate>Sat, 07 Sep 2002 00:00:01 GMT</pubDate></item>"
      "<item><link>b.html</link><pubDate>Tue, 10 Jun 2003 04:00:00 -0400"
      "</pubDate></item>"
      "<item><title>no link</title></item>"
      "<item><link>http://www.example.com/c</link>"
      "<pubDate>2003-06-10T09:41:01Z</pubDate></item>"
      "</channel></rss>",
      "http://www.example.com/news/feed.rss");
  EXPECT_EQ(c.report.format, Format::kRss);
  ASSERT_EQ(Urls(c),
            (std::vector<std::string>{"http://www.example.com/news/a.html",
                                      "http://www.example.com/news/b.html"}));
  EXPECT_EQ(c.entries[0].lastmod, 1031356801);
  EXPECT_EQ(c.entries[1].lastmod, 1055232000);  // 2003-06-10T08:00:00Z
  EXPECT_EQ(c.report.counters.no_loc, 1u);
  EXPECT_EQ(c.report.counters.outside_path, 1u);  // /c is above /news/
  ExpectBalanced(c);
}

TEST(Sitemaps, OtherFormats_Atom10AlternateLinkResolvedAgainstXmlBase) {
  const Contents c = ReadAt(
      "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
      "<feed xmlns=\"http://www.w3.org/2005/Atom\" "
      "xml:base=\"http://example.org/blog/\">"
      "<link href=\"/\" rel=\"alternate\"/>"
      "<updated>2003-12-13T18:30:02Z</updated>"
      "<entry><link href=\"2003/12/13/atom03\"/>"
      "<updated>2003-12-13T18:30:02Z</updated></entry>"
      "<entry xml:base=\"posts/\"><link rel=\"edit\" href=\"e/1\"/>"
      "<link rel=\"alternate\" type=\"text/html\" href=\"one\"/>"
      "<link rel=\"alternate\" href=\"two\"/>"
      "<published>2003-12-13T08:29:29-04:00</published></entry>"
      "<entry><link rel=\"enclosure\" href=\"x.mp3\"/></entry>"
      "<entry><link xml:base=\"http://example.org/blog/x/\" href=\"y\"/>"
      "</entry>"
      "</feed>",
      "http://example.org/blog/feed.atom");
  EXPECT_EQ(c.report.format, Format::kAtom);
  ASSERT_EQ(Urls(c), (std::vector<std::string>{
                         "http://example.org/blog/2003/12/13/atom03",
                         "http://example.org/blog/posts/one",
                         "http://example.org/blog/x/y"}));
  EXPECT_EQ(c.entries[0].lastmod, 1071340202);
  EXPECT_EQ(c.entries[1].lastmod, 1071318569);  // published, no updated
  EXPECT_FALSE(c.entries[2].lastmod.has_value());
  EXPECT_EQ(c.report.counters.no_loc, 1u);
  ExpectBalanced(c);
}

TEST(Sitemaps, OtherFormats_TextOneUrlPerLine) {
  const Contents c = ReadAt(
      "http://www.example.com/catalog?item=1\r\n"
      "\n"
      "   http://www.example.com/catalog?item=11   \n"
      "not a url\n"
      "http://www.example.com/caf\xc3\xa9\n"
      "http://www.example.com/bad\xff\n"
      "http://other.example.com/x\n"
      "http://www.example.com/last",
      "http://www.example.com/sitemap.txt");
  EXPECT_EQ(c.report.format, Format::kText);
  EXPECT_EQ(Urls(c),
            (std::vector<std::string>{"http://www.example.com/catalog?item=1",
                                      "http://www.example.com/catalog?item=11",
                                      "http://www.example.com/caf%C3%A9",
                                      "http://www.example.com/last"}));
  EXPECT_EQ(c.report.counters.invalid_url, 2u);  // "not a url", bad UTF-8
  EXPECT_EQ(c.report.counters.other_origin, 1u);
  EXPECT_TRUE(c.report.error.ok());
  ExpectBalanced(c);
}

TEST(Sitemaps, OtherFormats_TextOverlongLineIsCountedNotHeld) {
  const std::string huge =
      "http://www.example.com/" + std::string(1 << 20, 'x');
  const Contents c = ReadRoot(huge + "\nhttp://www.example.com/ok\n");
  EXPECT_EQ(Urls(c), std::vector<std::string>{"http://www.example.com/ok"});
  EXPECT_EQ(c.report.counters.too_long, 1u);
}

TEST(Sitemaps, OtherFormats_TextCutByTheCapDropsTheCutLine) {
  Options o;
  o.max_uncompressed_bytes = 1024;
  std::string text;
  for (int i = 0; text.size() < 2000; ++i) {
    text += "http://www.example.com/" + std::to_string(i) + "\n";
  }
  const Contents c = ReadRoot(text, o);
  EXPECT_TRUE(c.report.truncated);
  const size_t whole_lines = text.substr(0, 1024).rfind('\n');
  size_t n = 0;
  for (size_t i = 0; i <= whole_lines; ++i) n += text[i] == '\n';
  EXPECT_EQ(c.entries.size(), n);
}

TEST(Sitemaps, CrawldOnly_BlanksAndBomBeforeTheXmlDeclAreSkipped) {
  const std::string xml =
      "\xEF\xBB\xBF\n\n  " +
      Urlset(UrlEntry("http://www.example.com/a") + "\n<oops>");
  const Contents c = ReadRoot(xml);
  EXPECT_EQ(c.entries.size(), 1u);
  // The error position counts the skipped lines: "<oops></urlset>" is the
  // seventh.
  EXPECT_EQ(c.report.error_line, 7u);
  EXPECT_EQ(c.report.error.message(), "line 7, column 9: mismatched tag");
  EXPECT_EQ(c.report.error.code(), Status::Code::kCorruption);
}

TEST(Sitemaps, CrawldOnly_NoNamespaceOrOldNamespaceIsRead) {
  EXPECT_EQ(
      ReadRoot("<urlset>" + UrlEntry("http://www.example.com/a") + "</urlset>")
          .entries.size(),
      1u);
  EXPECT_EQ(ReadRoot("<urlset xmlns=\"http://www.google.com/schemas/sitemap/"
                     "0.84\">" +
                     UrlEntry("http://www.example.com/a") + "</urlset>")
                .entries.size(),
            1u);
}

TEST(Sitemaps, CrawldOnly_EmptyFileIsNoEntriesAndNoError) {
  const Contents c = ReadRoot("");
  EXPECT_TRUE(c.entries.empty());
  EXPECT_TRUE(c.report.error.ok());
  EXPECT_EQ(c.report.format, Format::kUnknown);
}

// ---------------------------------------------------------------------
// The streaming API: any split of the input gives the same result.

TEST(Sitemaps, Streaming_AnySplitGivesTheSameEntries) {
  std::string body;
  for (int i = 0; i < 200; ++i) {
    body += "<url><loc>http://www.example.com/" + std::to_string(i) +
            "</loc><lastmod>2020-01-0" + std::to_string(i % 9 + 1) +
            "</lastmod><priority>0." + std::to_string(i % 10) +
            "</priority></url>\n";
  }
  const std::string xml = Urlset(body) + "<trailing/>";
  const std::string gz = Gzip(xml);
  for (const std::string* input : {&xml, &gz}) {
    const Contents whole = ReadRoot(*input);
    std::mt19937 rng(17);
    for (int round = 0; round < 20; ++round) {
      Reader r(U("http://www.example.com/sitemap.xml"), {});
      std::vector<Entry> got;
      size_t at = 0;
      while (at < input->size()) {
        const size_t n = round == 0 ? 1 : 1 + rng() % 300;
        r.Feed(std::string_view(*input).substr(at, n));
        at += n;
        if (rng() % 4 == 0) r.TakeEntries(&got);
      }
      const Report& rep = r.Finish();
      r.TakeEntries(&got);
      ASSERT_EQ(got.size(), whole.entries.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].url, whole.entries[i].url);
        EXPECT_EQ(got[i].lastmod, whole.entries[i].lastmod);
        EXPECT_EQ(got[i].priority, whole.entries[i].priority);
      }
      EXPECT_EQ(rep.error.ToString(), whole.report.error.ToString());
      EXPECT_EQ(rep.error_line, whole.report.error_line);
      EXPECT_EQ(rep.error_column, whole.report.error_column);
      // (bytes_out differs when an error stops the reading: it counts what
      // had arrived by then.)
    }
  }
}

TEST(Sitemaps, Streaming_EntriesAreHandedOutAsTheyClose) {
  Reader r(U("http://www.example.com/sitemap.xml"), {});
  std::vector<Entry> got;
  r.Feed("<urlset " + std::string(kNs) + "><url><loc>http://www.exa");
  EXPECT_EQ(r.TakeEntries(&got), 0u);
  r.Feed("mple.com/a</loc></url><url>");
  EXPECT_EQ(r.TakeEntries(&got), 1u);
  EXPECT_EQ(got[0].url, "http://www.example.com/a");
  r.Feed("</url></urlset>");
  EXPECT_TRUE(r.Finish().error.ok());
  EXPECT_EQ(r.TakeEntries(&got), 0u);
  EXPECT_EQ(r.report().counters.no_loc, 1u);
}

// ---------------------------------------------------------------------
// Dates: W3C Datetime (https://www.w3.org/TR/NOTE-datetime) and RFC 822.

TEST(Dates, W3cDatetime_Forms) {
  EXPECT_EQ(ParseW3cDatetime("1997"), 852076800);
  EXPECT_EQ(ParseW3cDatetime("1997-07"), 867715200);
  EXPECT_EQ(ParseW3cDatetime("1997-07-16"), 869011200);
  EXPECT_EQ(ParseW3cDatetime("1997-07-16T19:20+01:00"), 869077200);
  EXPECT_EQ(ParseW3cDatetime("1997-07-16T19:20:30+01:00"), 869077230);
  EXPECT_EQ(ParseW3cDatetime("1997-07-16T19:20:30.45+01:00"), 869077230);
  EXPECT_EQ(ParseW3cDatetime("1997-07-16t18:20:30z"), 869077230);
  EXPECT_EQ(ParseW3cDatetime("2000-02-29"), 951782400);
  EXPECT_EQ(ParseW3cDatetime("1969-12-31T23:59:59Z"), -1);
}

TEST(Dates, W3cDatetime_Refused) {
  for (const char* s :
       {"", "97", "1997-7-16", "1997-07-16T19", "1997-07-16T19:20:30+0100x",
        "1997-13-01", "1997-02-29", "1900-02-29", "1997-07-16T24:00Z",
        "1997-07-16T19:60Z", "1997-07-16T19:20+24:00", "0000-01-01",
        "1997-07-16T19:20:30.Z", "1997-07-16 junk"}) {
    EXPECT_FALSE(ParseW3cDatetime(s).has_value()) << s;
  }
}

TEST(Dates, CrawldOnly_W3cDatetimeWithoutZoneIsUtc) {
  EXPECT_EQ(ParseW3cDatetime("1997-07-16T18:20:30"), 869077230);
}

TEST(Dates, Rfc822_FormsRssUses) {
  EXPECT_EQ(ParseRfc822Date("Sat, 07 Sep 2002 00:00:01 GMT"), 1031356801);
  EXPECT_EQ(ParseRfc822Date("7 Sep 2002 00:00:01 GMT"), 1031356801);
  EXPECT_EQ(ParseRfc822Date("Sat, 07 Sep 02 00:00 +0000"), 1031356800);
  EXPECT_EQ(ParseRfc822Date("Sat, 07 Sep 2002 02:00:01 +0200"), 1031356801);
  EXPECT_EQ(ParseRfc822Date("Fri, 06 Sep 2002 19:00:01 EST"), 1031356801);
  EXPECT_EQ(ParseRfc822Date("Fri, 06 Sep 2002 17:00:01 PDT"), 1031356801);
  EXPECT_EQ(ParseRfc822Date("Saturday, 07 September 2002 00:00:01 UT"),
            1031356801);
  EXPECT_EQ(ParseRfc822Date("07 Sep 1999 00:00:00 XYZ"), 936662400);
  EXPECT_EQ(ParseRfc822Date("07 Sep 99 00:00:00"), 936662400);
}

TEST(Dates, Rfc822_Refused) {
  for (const char* s :
       {"", "Sat 07 Sep 2002 00:00:01 GMT", "07 Sept", "07 Foo 2002 00:00 GMT",
        "31 Feb 2002 00:00 GMT", "07 Sep 2002 0:00 GMT",
        "07 Sep 2002 00:00 GMT x", "07 Sep 2 00:00 GMT"}) {
    EXPECT_FALSE(ParseRfc822Date(s).has_value()) << s;
  }
}

}  // namespace
}  // namespace crawld::sitemap

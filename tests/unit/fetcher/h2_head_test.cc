// The h2 -> HTTP/1.1 head conversion (fetcher/h2_head.h). Section names:
// iipc warc-specifications, "WARC Extensions for HTTP/2"
// (https://iipc.github.io/warc-specifications/specifications/warc-http2/),
// and RFC 9113 (https://www.rfc-editor.org/rfc/rfc9113).
#include "fetcher/h2_head.h"

#include <gtest/gtest.h>

#include <string>

namespace crawld::fetcher::internal {
namespace {

// What curl 7.88.1 shows for an h2 GET through its debug callback
// (CURLINFO_HEADER_OUT), as captured against nghttpd.
constexpr std::string_view kCurlH2Request =
    "GET /index.html?a=1 HTTP/2\r\n"
    "Host: h2.test:8443\r\n"
    "user-agent: crawld-test/0.1 (+http://127.0.0.1/contact)\r\n"
    "accept: */*\r\n"
    "accept-encoding: gzip, deflate, br, zstd\r\n"
    "\r\n";

// "Handling of reason phrases": HTTP/2 has none; "HTTP/1.1" SP code SP.
TEST(WarcHttp2, ReasonPhrases_StatusLineHasAnEmptyReason) {
  EXPECT_EQ(Http11StatusLine("HTTP/2 200 \r\n"), "HTTP/1.1 200 \r\n");
  EXPECT_EQ(Http11StatusLine("HTTP/2 404\r\n"), "HTTP/1.1 404 \r\n");
  EXPECT_EQ(Http11StatusLine("HTTP/2 301 \n"), "HTTP/1.1 301 \r\n");
  EXPECT_EQ(Http11StatusLine("HTTP/2 103"), "HTTP/1.1 103 \r\n");
  EXPECT_TRUE(IsH2StatusLine("HTTP/2 200 \r\n"));
}

// "Non-standard HTTP/2 textual representations": only curl's "HTTP/2"
// line is rewritten; an HTTP/1.x status line passes byte for byte.
TEST(WarcHttp2, Crawld_OtherStatusLinesAreUnchanged) {
  for (std::string_view line :
       {"HTTP/1.1 200 OK\r\n", "HTTP/1.0 404 Not Found\r\n", "HTTP/2.0 200\r\n",
        "HTTP/2 20\r\n", "HTTP/2 2000\r\n", "HTTP/2 2x0\r\n", "HTTP/2\r\n",
        "HTTP/22 200\r\n", "", "garbage"}) {
    EXPECT_FALSE(IsH2StatusLine(line)) << line;
    EXPECT_EQ(Http11StatusLine(line), line);
  }
}

// "Encoding HTTP/2 messages as HTTP/1.1": the request line from :method
// and :path, host from :authority, names lower-case as sent.
TEST(WarcHttp2, Encoding_CurlRequestBecomesHttp11) {
  EXPECT_TRUE(IsH2RequestHead(kCurlH2Request));
  EXPECT_EQ(Http11RequestHead(kCurlH2Request),
            "GET /index.html?a=1 HTTP/1.1\r\n"
            "host: h2.test:8443\r\n"
            "user-agent: crawld-test/0.1 (+http://127.0.0.1/contact)\r\n"
            "accept: */*\r\n"
            "accept-encoding: gzip, deflate, br, zstd\r\n"
            "\r\n");
}

// RFC 9113 8.2.1: names are lower-case on the wire; values are kept byte
// for byte (case, inner spaces).
TEST(Rfc9113, Sec8_2_1_NamesLowerCaseValuesKept) {
  EXPECT_EQ(Http11RequestHead("GET / HTTP/2\r\nHost: a\r\n"
                              "If-None-Match: \"Xy  Z\"\r\n\r\n"),
            "GET / HTTP/1.1\r\nhost: a\r\nif-none-match: \"Xy  Z\"\r\n\r\n");
}

// RFC 9113 8.2.2: connection-specific fields are not sent over h2 (curl
// drops them), so the record leaves them out; "te: trailers" is allowed.
TEST(Rfc9113, Sec8_2_2_ConnectionSpecificFieldsLeftOut) {
  EXPECT_EQ(Http11RequestHead("GET / HTTP/2\r\nHost: a\r\n"
                              "Connection: keep-alive\r\nKeep-Alive: 5\r\n"
                              "Proxy-Connection: x\r\n"
                              "Transfer-Encoding: chunked\r\nUpgrade: h2c\r\n"
                              "TE: gzip\r\nx-kept: 1\r\nte: trailers\r\n\r\n"),
            "GET / HTTP/1.1\r\nhost: a\r\nx-kept: 1\r\nte: trailers\r\n\r\n");
}

// An HTTP/1.1 request (plain http, or TLS without h2) is stored exactly as
// sent: the conversion must not touch it.
TEST(WarcHttp2, Crawld_Http11RequestIsUnchanged) {
  const std::string h1 =
      "GET /x HTTP/1.1\r\nHost: a:80\r\nUser-Agent: u\r\nAccept: */*\r\n\r\n";
  EXPECT_FALSE(IsH2RequestHead(h1));
  EXPECT_EQ(Http11RequestHead(h1), h1);
  EXPECT_FALSE(IsH2RequestHead(""));
  EXPECT_FALSE(IsH2RequestHead("HTTP/2"));
  EXPECT_FALSE(IsH2RequestHead(" HTTP/2"));
}

// Bare LF line ends, a missing blank line, a line without a colon: the
// result is still one head ending in CRLF CRLF, and converting twice
// changes nothing more.
TEST(WarcHttp2, Crawld_OddInputStillGivesOneHead) {
  const std::string out =
      Http11RequestHead("GET / HTTP/2\nHost: a\nodd line\nX-A: b");
  EXPECT_EQ(out, "GET / HTTP/1.1\r\nhost: a\r\nodd line\r\nx-a: b\r\n\r\n");
  EXPECT_EQ(Http11RequestHead(out), out);
  EXPECT_EQ(Http11RequestHead(Http11RequestHead(kCurlH2Request)),
            Http11RequestHead(kCurlH2Request));
  // Whatever follows the blank line is not part of the head.
  EXPECT_EQ(Http11RequestHead("GET / HTTP/2\r\nHost: a\r\n\r\nbody"),
            "GET / HTTP/1.1\r\nhost: a\r\n\r\n");
}

}  // namespace
}  // namespace crawld::fetcher::internal

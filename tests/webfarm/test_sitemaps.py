"""The webfarm's sitemaps (docs/WEBFARM.md, "Sitemaps"), read by the real
sitemap reader (`crawlctl sitemap`, sitemap/sitemap.h) over live fetches.

A reference crawler that reads robots.txt Sitemap: lines the way
docs/SITEMAPS.md tells the daemon to (a sitemap is fetched after its own
host's robots.txt, is read with the hosts whose robots.txt named it as
cross-submitted, and a sitemap index hands the same hosts to its children)
must fetch exactly the manifest, including every page of sitemap_only.txt,
which no link reaches, and none of sitemap_never.txt.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))

import harness  # noqa: E402
from harness import Webfarm  # noqa: E402
from test_webfarm import LinkParser, fetch, reference_crawl  # noqa: E402

CFG = {"seed": 7, "hosts": 4, "pages": 8, "links": 3,
       "cross_host_share": 0.2,
       "profile": [{"hosts": [0], "sitemap": True, "sitemap_pages": 5},
                   {"hosts": [2], "sitemap": True, "robots": "disallow"}]}


def lines(farm, name):
    with open(os.path.join(farm.dir, name)) as f:
        return [x for x in f.read().split("\n") if x]


def read_sitemap(body, url, cross_hosts):
    """`crawlctl sitemap --json` on a fetched body; returns its JSON."""
    with tempfile.NamedTemporaryFile(prefix="sitemap-") as f:
        f.write(body)
        f.flush()
        args = [harness.binary("crawlctl"), "sitemap", f.name, "--url", url,
                "--json"]
        if cross_hosts:
            args += ["--cross-submitted", ",".join(sorted(cross_hosts))]
        r = subprocess.run(args, capture_output=True, timeout=120)
    if r.returncode not in (0, 1):
        raise AssertionError(f"crawlctl sitemap {url}: exit {r.returncode}: "
                             f"{r.stderr.decode()}")
    return json.loads(r.stdout)


def sitemap_crawl(farm, max_urls=5000):
    """reference_crawl (test_webfarm.py) plus sitemaps. Returns (fetched,
    disallowed, {sitemap URL: crawlctl JSON})."""
    robots, sitemaps, read = {}, [], {}

    def rules(host):
        if host not in robots:
            st, _, body = fetch(farm, host, "/robots.txt")
            assert st == 200, (host, st)  # the sitemap profile's robots
            text = body.decode()
            robots[host] = [ln.split(":", 1)[1].strip()
                            for ln in text.splitlines()
                            if ln.lower().startswith("disallow:") and
                            ln.split(":", 1)[1].strip()]
            for ln in text.splitlines():
                if ln.lower().startswith("sitemap:"):
                    sitemaps.append((ln.split(":", 1)[1].strip(), {host}))
        return robots[host]

    seen, fetched, disallowed = set(), set(), set()
    queue = list(farm.seeds())
    seen.update(queue)

    def push(url):
        if url not in seen:
            seen.add(url)
            queue.append(url)

    while (queue or sitemaps) and len(fetched) < max_urls:
        if sitemaps:
            url, cross = sitemaps.pop(0)
            if url in read:
                continue
            u = urllib.parse.urlsplit(url)
            if any(u.path.startswith(p) for p in rules(u.hostname)):
                continue
            st, _, body = fetch(farm, u.hostname, u.path)
            assert st == 200, (url, st)
            read[url] = d = read_sitemap(body, url, cross)
            for e in d["entries"]:
                if e["kind"] == "sitemap":
                    sitemaps.append((e["url"], cross))
                else:
                    push(e["url"])
            continue
        url = queue.pop(0)
        u = urllib.parse.urlsplit(url)
        if any(u.path.startswith(p) for p in rules(u.hostname)):
            disallowed.add(url)
            continue
        fetched.add(url)
        st, hd, body = fetch(farm, u.hostname, u.path)
        if st != 200 or not hd.get("content-type", "").startswith(
                "text/html"):
            continue
        p = LinkParser()
        p.feed(body.decode("latin-1"))
        for href, nofollow in p.links:
            if not nofollow:
                push(urllib.parse.urljoin(url, href))
    return fetched, disallowed, read


class Sitemaps(unittest.TestCase):

    def test_off_by_default_nothing_changes(self):
        with Webfarm({"hosts": 2, "pages": 4}) as farm:
            for name in ("sitemap_only.txt", "sitemap_never.txt",
                         "sitemaps.txt"):
                self.assertEqual(lines(farm, name), [], name)
            st, _, body = fetch(farm, "h0.farm.test", "/robots.txt")
            self.assertNotIn(b"Sitemap", body)
            for path in ("/sitemap.xml", "/sm/0.html", "/sm/cross.html",
                         "/sm/foreign.html"):
                self.assertEqual(fetch(farm, "h0.farm.test", path)[0], 404)

    def test_robots_txt_names_the_sitemaps(self):
        with Webfarm(CFG) as farm:
            o = lambda h: f"http://h{h}.farm.test:{farm.port}"
            _, _, body = fetch(farm, "h0.farm.test", "/robots.txt")
            got = [ln for ln in body.decode().splitlines()
                   if ln.startswith("Sitemap:")]
            # h0's own, and h2's cross sitemap (h0 is h2's next sitemap host).
            self.assertEqual(got, [f"Sitemap: {o(0)}/sitemap.xml",
                                   f"Sitemap: {o(0)}/sitemap_index.xml",
                                   f"Sitemap: {o(2)}/sitemap-cross.xml"])
            _, _, body = fetch(farm, "h2.farm.test", "/robots.txt")
            self.assertIn(f"Sitemap: {o(0)}/sitemap-cross.xml",
                          body.decode())
            self.assertIn("Disallow: /private/", body.decode())
            files = lines(farm, "sitemaps.txt")
            self.assertEqual(len(files), 16)
            for url in files:
                u = urllib.parse.urlsplit(url)
                st, hd, _ = fetch(farm, u.hostname, u.path)
                self.assertEqual(st, 200, url)
                self.assertNotIn("content-encoding", hd)  # gzip files

    def test_each_sitemap_reads_as_documented(self):
        with Webfarm(CFG) as farm:
            o = f"http://h0.farm.test:{farm.port}"

            def read(path, cross=("h0.farm.test",)):
                st, _, body = fetch(farm, "h0.farm.test", path)
                self.assertEqual(st, 200, path)
                return read_sitemap(body, o + path, set(cross))

            main = read("/sitemap.xml")
            self.assertEqual(main["format"], "urlset")
            self.assertEqual([e["url"] for e in main["entries"]],
                             [o + "/p/0.html", o + "/sm/0.html",
                              o + "/sm/2.html", o + "/sm/4.html"])
            p0, sm2 = main["entries"][0], main["entries"][2]
            self.assertEqual((p0["priority"], p0["changefreq"]),
                             (1.0, "daily"))
            self.assertEqual(sm2["lastmod"], 1767268800 + 2 * 86400)
            self.assertEqual((sm2["changefreq"], sm2["priority"]),
                             ("monthly", 0.2))
            index = read("/sitemap_index.xml")
            self.assertEqual(index["format"], "sitemapindex")
            self.assertEqual(
                [e["url"] for e in index["entries"]],
                [o + p for p in ("/sitemap-gz.xml.gz", "/sitemap-big.xml",
                                 "/sitemap-bad.xml", "/sitemap-foreign.xml",
                                 "/sitemap-bomb.xml.gz")])
            self.assertTrue(all(e["kind"] == "sitemap"
                                for e in index["entries"]))
            gz = read("/sitemap-gz.xml.gz")
            self.assertTrue(gz["gzip"])
            self.assertEqual([e["url"] for e in gz["entries"]],
                             [o + "/sm/1.html", o + "/sm/3.html"])
            big = read("/sitemap-big.xml")
            self.assertEqual(big["counters"]["entries"], 50001)
            self.assertEqual(big["counters"]["admitted"], 50000)
            self.assertEqual(big["counters"]["over_limit"], 1)
            self.assertNotIn(o + "/sm/over.html",
                             [e["url"] for e in big["entries"]])
            bad = read("/sitemap-bad.xml")
            self.assertEqual([e["url"] for e in bad["entries"]],
                             [o + "/sm/before-error.html"])
            self.assertEqual(bad["error"]["code"], "corruption")
            self.assertEqual(bad["error"]["line"], 4)
            foreign = read("/sitemap-foreign.xml")
            self.assertEqual(foreign["entries"], [])
            self.assertEqual(foreign["counters"]["other_origin"], 1)
            bomb = read("/sitemap-bomb.xml.gz")
            self.assertTrue(bomb["truncated"])
            self.assertEqual(bomb["counters"]["bytes_out"], 50 << 20)
            self.assertLess(bomb["counters"]["bytes_in"], 2 << 20)
            # h2's cross sitemap lists h0's /sm/cross.html: admitted only
            # with h0 as cross-submitted (h0's robots.txt names it).
            st, _, body = fetch(farm, "h2.farm.test", "/sitemap-cross.xml")
            url = f"http://h2.farm.test:{farm.port}/sitemap-cross.xml"
            self.assertEqual(read_sitemap(body, url, set())["counters"]
                             ["other_origin"], 1)
            self.assertEqual(
                [e["url"] for e in read_sitemap(
                    body, url, {"h0.farm.test"})["entries"]],
                [o + "/sm/cross.html"])

    def test_manifest_equals_a_sitemap_reading_crawl(self):
        with Webfarm(CFG) as farm:
            fetched, disallowed, read = sitemap_crawl(farm)
            self.assertEqual(sorted(fetched), farm.manifest())
            self.assertEqual(sorted(disallowed), farm.disallowed())
            self.assertEqual(sorted(read), lines(farm, "sitemaps.txt"))
            only = lines(farm, "sitemap_only.txt")
            never = lines(farm, "sitemap_never.txt")
            port = farm.port
            self.assertEqual(only, sorted(
                [f"http://h0.farm.test:{port}/sm/{k}.html" for k in range(5)] +
                [f"http://h2.farm.test:{port}/sm/{k}.html" for k in range(4)] +
                [f"http://h{h}.farm.test:{port}/sm/{p}.html"
                 for h in (0, 2) for p in ("before-error",)] +
                [f"http://h0.farm.test:{port}/sm/cross.html",
                 f"http://h2.farm.test:{port}/sm/cross.html"]))
            self.assertEqual(never, sorted(
                [f"http://h{h}.farm.test:{port}/sm/{p}.html"
                 for h in (0, 2) for p in ("over", "after-error")] +
                [f"http://h1.farm.test:{port}/sm/foreign.html",
                 f"http://h3.farm.test:{port}/sm/foreign.html"]))
            self.assertFalse(set(never) & fetched)
            # Only the sitemaps find them: a crawl that follows links
            # alone fetches the manifest less the sitemap-only pages.
            links_only, _ = reference_crawl(farm)
            self.assertEqual(sorted(links_only),
                             sorted(set(farm.manifest()) - set(only)))
            # The never-URLs answer 200 (for impolite crawlers), as
            # /private/ pages do.
            for url in never:
                u = urllib.parse.urlsplit(url)
                self.assertEqual(fetch(farm, u.hostname, u.path)[0], 200,
                                 url)

    def test_sitemap_needs_a_robots_txt_that_answers(self):
        with self.assertRaises(RuntimeError) as ctx:
            with Webfarm({"hosts": 2, "profile": [
                    {"hosts": [1], "sitemap": True, "robots": "500"}]}):
                pass
        self.assertIn("sitemap needs robots", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()

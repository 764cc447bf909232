"""crawlctl's offline command contracts, run as a user would run them."""
import os
import tempfile
import unittest

import crawl_util


class FilterTest(unittest.TestCase):

    def test_each_url_gets_verdict_and_deciding_rule(self):
        d = tempfile.mkdtemp()
        rules = os.path.join(d, "scope.rules")
        with open(rules, "w") as f:
            f.write("# scope\n"
                    "reject regex ^https?://[^/]+/cgi-bin/\n"
                    "accept suffix .example.org\n"
                    "default reject\n")
        urls = ("http://www.example.org/a\n"
                "http://www.example.org/cgi-bin/x\n"
                "http://other.test/\n")
        proc = crawl_util.crawlctl("filter", "test", "--rules", rules,
                                   input_text=urls)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.splitlines(), [
            f"accept\t{rules}:3",
            f"reject\t{rules}:2",
            "reject\tdefault",
        ])

    def test_a_file_with_recrawl_lines_also_names_the_interval_rule(self):
        d = tempfile.mkdtemp()
        rules = os.path.join(d, "recrawl.rules")
        with open(rules, "w") as f:
            f.write("recrawl 1h prefix http://www.example.org/news/\n"
                    "reject regex ^https?://[^/]+/cgi-bin/\n"
                    "recrawl 1d..30d suffix .example.org\n"
                    "default accept\n")
        urls = ("http://www.example.org/news/a\n"
                "http://www.example.org/cgi-bin/x\n"
                "http://other.test/\n")
        proc = crawl_util.crawlctl("filter", "test", "--rules", rules,
                                   input_text=urls)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.splitlines(), [
            f"accept\tdefault\trecrawl {rules}:1",
            f"reject\t{rules}:2\trecrawl {rules}:3",
            "accept\tdefault\trecrawl default",
        ])

    def test_invalid_rules_file_names_file_and_line_and_exits_2(self):
        d = tempfile.mkdtemp()
        rules = os.path.join(d, "bad.rules")
        with open(rules, "w") as f:
            f.write("accept host example.com\nreject regex (unclosed\n")
        proc = crawl_util.crawlctl("filter", "test", "--rules", rules,
                                   input_text="http://example.com/\n")
        self.assertEqual(proc.returncode, 2)
        self.assertIn(f"{rules}:2", proc.stderr)
        self.assertEqual(proc.stdout, "")


class WarcCommands(unittest.TestCase):

    def test_verify_rejects_a_damaged_file(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "bad.warc")
        with open(path, "wb") as f:
            f.write(b"WARC/1.1\r\nWARC-Type: warcinfo\r\n"
                    b"Content-Length: 100\r\n\r\nshort")
        proc = crawl_util.crawlctl("warc", "verify", path)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)


if __name__ == "__main__":
    unittest.main()

// Tests of metrics/metrics.h: the registry's rules, its output read back
// by a small parser of the Prometheus text format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), and the
// JSON snapshot one process imports from another.
#include "metrics/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace crawld::metrics {
namespace {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::map<std::string, std::string> help;  // unescaped
  std::map<std::string, std::string> type;
  std::vector<Sample> samples;
  std::string error;  // first syntax problem, "" if none

  // The value of the one sample with this name and labels, or NaN.
  double Value(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const {
    for (const Sample& s : samples) {
      if (s.name == name && s.labels == labels) return s.value;
    }
    return std::nan("");
  }
};

double ParseValue(const std::string& s) {
  if (s == "+Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  if (s == "NaN") return std::nan("");
  size_t used = 0;
  const double v = std::stod(s, &used);
  return used == s.size() ? v : std::nan("");
}

// A strict reader of what the registry emits: every line is a HELP, a TYPE
// or a sample; every sample belongs to the family of the last TYPE line.
Exposition ParseExposition(const std::string& text) {
  Exposition out;
  std::istringstream in(text);
  std::string line;
  std::string family;
  if (!text.empty() && text.back() != '\n') out.error = "no final newline";
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      const std::string rest = line.substr(7);
      const size_t sp = rest.find(' ');
      std::string help;
      for (size_t i = sp + 1; i < rest.size(); ++i) {
        if (rest[i] == '\\' && i + 1 < rest.size()) {
          help.push_back(rest[i + 1] == 'n' ? '\n' : rest[i + 1]);
          ++i;
        } else {
          help.push_back(rest[i]);
        }
      }
      out.help[rest.substr(0, sp)] = help;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream fields(line.substr(7));
      std::string type;
      fields >> family >> type;
      out.type[family] = type;
      continue;
    }
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t eq = line.find("=\"", i);
        if (eq == std::string::npos) {
          out.error = "bad label in: " + line;
          return out;
        }
        const std::string name = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value.push_back(line[j] == 'n' ? '\n' : line[j]);
          } else {
            value.push_back(line[j]);
          }
        }
        s.labels[name] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') {
      out.error = "no value in: " + line;
      return out;
    }
    s.value = ParseValue(line.substr(i + 1));
    const bool in_family = s.name == family || s.name == family + "_bucket" ||
                           s.name == family + "_sum" ||
                           s.name == family + "_count";
    if (!in_family) out.error = "sample outside its family: " + line;
    out.samples.push_back(std::move(s));
  }
  return out;
}

TEST(CrawldMetrics, CounterIsExposedWithTotalSuffix) {
  Registry reg;
  Result<Counter*> c = reg.GetCounter("crawld_pages_fetched", "Pages fetched.",
                                      {{"worker", "0"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  (*c)->Increment();
  (*c)->Increment(2);
  (*c)->Increment(-5);  // ignored: counters never go down
  const Exposition e = ParseExposition(reg.Render());
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.type.at("crawld_pages_fetched_total"), "counter");
  EXPECT_EQ(e.help.at("crawld_pages_fetched_total"), "Pages fetched.");
  EXPECT_EQ(e.Value("crawld_pages_fetched_total", {{"worker", "0"}}), 3);
}

TEST(CrawldMetrics, SameNameAndLabelsGiveTheSameSeries) {
  Registry reg;
  Counter* a = *reg.GetCounter("x_total", "X.", {{"a", "1"}, {"b", "2"}});
  Counter* b = *reg.GetCounter("x", "X.", {{"b", "2"}, {"a", "1"}});
  Counter* other = *reg.GetCounter("x", "X.", {{"a", "1"}, {"b", "3"}});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  EXPECT_EQ(reg.series_count(), 2u);
}

TEST(CrawldMetrics, GaugeGoesUpAndDown) {
  Registry reg;
  Gauge* g = *reg.GetGauge("crawld_queue_urls", "Queued URLs.");
  g->Set(10);
  g->Add(-3.5);
  const Exposition e = ParseExposition(reg.Render());
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.type.at("crawld_queue_urls"), "gauge");
  EXPECT_EQ(e.Value("crawld_queue_urls"), 6.5);
}

TEST(CrawldMetrics, HistogramBucketsAreCumulativeAndUpperInclusive) {
  Registry reg;
  Histogram* h = *reg.GetHistogram("crawld_fetch_seconds", "Fetch time.",
                                   {0.1, 1, 10}, {{"code", "200"}});
  for (double v : {0.05, 0.1, 0.5, 1.0, 5.0, 50.0}) h->Observe(v);
  h->Observe(std::nan(""));  // ignored
  const Exposition e = ParseExposition(reg.Render());
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.type.at("crawld_fetch_seconds"), "histogram");
  const std::string b = "crawld_fetch_seconds_bucket";
  EXPECT_EQ(e.Value(b, {{"code", "200"}, {"le", "0.1"}}), 2);
  EXPECT_EQ(e.Value(b, {{"code", "200"}, {"le", "1"}}), 4);
  EXPECT_EQ(e.Value(b, {{"code", "200"}, {"le", "10"}}), 5);
  EXPECT_EQ(e.Value(b, {{"code", "200"}, {"le", "+Inf"}}), 6);
  EXPECT_EQ(e.Value("crawld_fetch_seconds_count", {{"code", "200"}}), 6);
  EXPECT_DOUBLE_EQ(e.Value("crawld_fetch_seconds_sum", {{"code", "200"}}),
                   56.65);
}

TEST(CrawldMetrics, DefaultBucketsWhenNoneGiven) {
  Registry reg;
  Histogram* h = *reg.GetHistogram("lat_seconds", "Latency.", {});
  EXPECT_EQ(h->bounds(), Registry::DefaultBuckets());
}

TEST(CrawldMetrics, LabelValuesAndHelpAreEscaped) {
  Registry reg;
  const std::string hostile = "a\"b\\c\nd} x=\"1\"";
  Counter* c = *reg.GetCounter("errors", "Errors by \\ host\nsecond line.",
                               {{"host", hostile}});
  c->Increment();
  const std::string text = reg.Render();
  EXPECT_NE(text.find(R"(host="a\"b\\c\nd} x=\"1\"")"), std::string::npos)
      << text;
  const Exposition e = ParseExposition(text);
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.Value("errors_total", {{"host", hostile}}), 1);
  EXPECT_EQ(e.help.at("errors_total"), "Errors by \\ host\nsecond line.");
}

TEST(CrawldMetrics, OutputIsSortedAndStable) {
  Registry reg;
  (*reg.GetGauge("b_gauge", "B.", {{"k", "z"}}))->Set(1);
  (*reg.GetGauge("b_gauge", "B.", {{"k", "a"}}))->Set(2);
  (*reg.GetGauge("a_gauge", "A."))->Set(3);
  const std::string first = reg.Render();
  EXPECT_EQ(first,
            "# HELP a_gauge A.\n# TYPE a_gauge gauge\na_gauge 3\n"
            "# HELP b_gauge B.\n# TYPE b_gauge gauge\n"
            "b_gauge{k=\"a\"} 2\nb_gauge{k=\"z\"} 1\n");
  EXPECT_EQ(reg.Render(), first);
}

TEST(CrawldMetrics, SpecialValuesUseExpositionSpelling) {
  Registry reg;
  (*reg.GetGauge("g_inf", "I."))->Set(INFINITY);
  (*reg.GetGauge("g_nan", "N."))->Set(std::nan(""));
  (*reg.GetGauge("g_small", "S."))->Set(0.1);
  const std::string text = reg.Render();
  EXPECT_NE(text.find("g_inf +Inf\n"), std::string::npos);
  EXPECT_NE(text.find("g_nan NaN\n"), std::string::npos);
  EXPECT_NE(text.find("g_small 0.1\n"), std::string::npos);
}

TEST(CrawldMetrics, CollectorsRunBeforeRender) {
  Registry reg;
  Gauge* g = *reg.GetGauge("open_files", "Open files.");
  int calls = 0;
  reg.AddCollector([&] { g->Set(++calls * 10); });
  EXPECT_EQ(ParseExposition(reg.Render()).Value("open_files"), 10);
  EXPECT_EQ(ParseExposition(reg.Render()).Value("open_files"), 20);
}

TEST(CrawldMetrics, InvalidRegistrationsAreRejected) {
  Registry reg;
  EXPECT_FALSE(reg.GetCounter("9bad", "").ok());
  EXPECT_FALSE(reg.GetCounter("bad-name", "").ok());
  EXPECT_FALSE(reg.GetCounter("ok", "", {{"__reserved", "x"}}).ok());
  EXPECT_FALSE(reg.GetCounter("ok", "", {{"a", "1"}, {"a", "2"}}).ok());
  EXPECT_FALSE(reg.GetHistogram("h", "", {1, 1}).ok());
  EXPECT_FALSE(reg.GetHistogram("h", "", {2, 1}).ok());
  EXPECT_FALSE(reg.GetHistogram("h", "", {1, INFINITY}).ok());
  EXPECT_FALSE(reg.GetHistogram("h", "", {1}, {{"le", "x"}}).ok());

  // The counter "taken" is exposed as taken_total: a gauge of that name
  // would make two families of one name.
  ASSERT_TRUE(reg.GetCounter("taken", "").ok());
  EXPECT_FALSE(reg.GetGauge("taken_total", "").ok());
  ASSERT_TRUE(reg.GetGauge("labelled", "", {{"a", "1"}}).ok());
  EXPECT_FALSE(reg.GetGauge("labelled", "", {{"b", "1"}}).ok());
  ASSERT_TRUE(reg.GetHistogram("hist", "", {1, 2}).ok());
  EXPECT_FALSE(reg.GetHistogram("hist", "", {1, 3}).ok());
}

TEST(CrawldMetrics, SeriesCapStopsLabelExplosion) {
  Registry::Options options;
  options.max_series = 3;
  Registry reg(options);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        reg.GetCounter("by_host", "", {{"host", std::to_string(i)}}).ok());
  }
  Result<Counter*> over = reg.GetCounter("by_host", "", {{"host", "x"}});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Status::Code::kResourceExhausted);
  // An existing series is still handed out.
  EXPECT_TRUE(reg.GetCounter("by_host", "", {{"host", "1"}}).ok());
}

// --- Snapshot and Import: worker metrics as structured data (issue 13) ---

// What a worker registers (the shapes that matter: a counter with and
// without labels, a gauge, a histogram).
void FillLikeAWorker(Registry& r, double pages, double h4xx) {
  (*r.GetCounter("crawld_pages_fetched_total", "Pages."))->Increment(pages);
  (*r.GetCounter("crawld_events_total", "Events.", {{"event", "http_4xx"}}))
      ->Increment(h4xx);
  (*r.GetGauge("crawld_queued_urls", "Queued."))->Set(pages * 2);
  Histogram* h =
      *r.GetHistogram("crawld_fetch_duration_seconds", "Durations.", {0.1, 1});
  h->Observe(0.05);
  h->Observe(0.5);
}

TEST(CrawldMetrics, ImportLabelsEachWorkerAndRendersOneExposition) {
  Registry w0, w1;
  FillLikeAWorker(w0, 10, 1);
  FillLikeAWorker(w1, 7, 2);
  Registry sup;
  (*sup.GetGauge("crawld_workers_up", "Up."))->Set(2);
  // Through the text a worker would send.
  auto wire = [](Registry& r) {
    return *json::Parse(json::Dump(r.Snapshot()));
  };
  EXPECT_EQ(sup.Import(wire(w0), {{"worker", "0"}}), 0u);
  EXPECT_EQ(sup.Import(wire(w1), {{"worker", "1"}}), 0u);
  const std::string text = sup.Render();
  const Exposition e = ParseExposition(text);
  ASSERT_EQ(e.error, "") << text;
  EXPECT_EQ(e.Value("crawld_pages_fetched_total", {{"worker", "0"}}), 10);
  EXPECT_EQ(e.Value("crawld_pages_fetched_total", {{"worker", "1"}}), 7);
  EXPECT_EQ(
      e.Value("crawld_events_total", {{"event", "http_4xx"}, {"worker", "1"}}),
      2);
  EXPECT_EQ(e.Value("crawld_queued_urls", {{"worker", "1"}}), 14);
  EXPECT_EQ(e.Value("crawld_fetch_duration_seconds_bucket",
                    {{"le", "0.1"}, {"worker", "0"}}),
            1);
  EXPECT_EQ(e.Value("crawld_fetch_duration_seconds_bucket",
                    {{"le", "+Inf"}, {"worker", "0"}}),
            2);
  EXPECT_EQ(e.Value("crawld_fetch_duration_seconds_count", {{"worker", "1"}}),
            2);
  EXPECT_DOUBLE_EQ(
      e.Value("crawld_fetch_duration_seconds_sum", {{"worker", "1"}}), 0.55);
  EXPECT_EQ(e.Value("crawld_workers_up"), 2);
  EXPECT_EQ(e.type.at("crawld_fetch_duration_seconds"), "histogram");
  EXPECT_EQ(e.type.at("crawld_pages_fetched_total"), "counter");
  EXPECT_EQ(e.help.at("crawld_queued_urls"), "Queued.");
  // One HELP and one TYPE per family.
  size_t types = 0;
  for (size_t p = 0; (p = text.find("# TYPE ", p)) != std::string::npos; ++p) {
    ++types;
  }
  EXPECT_EQ(types, e.type.size());
}

TEST(CrawldMetrics, SnapshotKeepsSpecialValuesAndImportSums) {
  Registry w;
  (*w.GetGauge("g_inf", "I."))->Set(INFINITY);
  (*w.GetGauge("g_nan", "N."))->Set(std::nan(""));
  (*w.GetGauge("g", "G.", {{"k", "v"}}))->Set(1.5);
  Json snap = w.Snapshot();
  Registry sum;
  EXPECT_EQ(sum.Import(snap), 0u);
  EXPECT_EQ(sum.Import(snap), 0u);  // the same labels twice: added up
  const Exposition e = ParseExposition(sum.Render());
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.Value("g", {{"k", "v"}}), 3);
  EXPECT_EQ(e.Value("g_inf"), INFINITY);
  EXPECT_TRUE(std::isnan(e.Value("g_nan")));
}

TEST(CrawldMetrics, ImportSkipsHostileSeriesOneByOneNotTheWholeSnapshot) {
  Result<Json> snap = json::Parse(R"({"families": [
    {"name": "a_total", "type": "counter", "help": "A.", "series": [
      {"labels": {"worker": "9", "x": "q\"\\\n"}, "value": 1},
      {"labels": {"x": 1}, "value": 1},
      {"labels": {"bad-label": "1"}, "value": 1},
      {"labels": {}, "value": "lots"},
      {"value": 1}]},
    {"name": "a_total", "type": "gauge", "help": "", "series": [
      {"labels": {}, "value": 5}]},
    {"name": "9bad", "type": "gauge", "series": [{"labels": {}, "value": 1}]},
    {"name": "h", "type": "histogram", "bounds": [1, 2], "series": [
      {"labels": {}, "buckets": [1, 2], "count": 3, "sum": 1},
      {"labels": {"le": "1"}, "buckets": [1, 2, 3], "count": 6, "sum": 1},
      {"labels": {}, "buckets": [1, -2, 3], "count": 6, "sum": 1},
      {"labels": {"ok": "1"}, "buckets": [1, 2, 3], "count": 6, "sum": 9}]},
    {"name": "h2", "type": "histogram", "bounds": [], "series": [{}]},
    {"name": "s", "type": "summary", "series": [{}]},
    "not an object",
    {"name": "g", "type": "gauge", "help": "G.", "series": [
      {"labels": {}, "value": "+Inf"}]}]})");
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  Registry reg;
  EXPECT_EQ(reg.Import(*snap, {{"worker", "0"}}), 12u);
  const std::string text = reg.Render();
  const Exposition e = ParseExposition(text);
  ASSERT_EQ(e.error, "") << text;
  // The source's worker label is replaced, not repeated; escapes survive.
  EXPECT_EQ(e.Value("a_total", {{"worker", "0"}, {"x", "q\"\\\n"}}), 1);
  EXPECT_EQ(text.find("worker=\"9\""), std::string::npos);
  EXPECT_EQ(e.Value("h_count", {{"ok", "1"}, {"worker", "0"}}), 6);
  EXPECT_EQ(e.Value("h_bucket", {{"le", "2"}, {"ok", "1"}, {"worker", "0"}}),
            3);
  EXPECT_EQ(e.Value("g", {{"worker", "0"}}), INFINITY);
  EXPECT_EQ(e.type.count("s"), 0u);
  // Anything that is not a snapshot is one skip, and nothing else.
  EXPECT_EQ(reg.Import(Json("x")), 1u);
  EXPECT_EQ(reg.Import(Json::object()), 1u);
}

TEST(CrawldMetrics, ImportRespectsTheSeriesCap) {
  Registry w;
  for (int i = 0; i < 5; ++i) {
    (*w.GetCounter("by_host", "", {{"host", std::to_string(i)}}))->Increment();
  }
  Registry::Options options;
  options.max_series = 3;
  Registry capped(options);
  EXPECT_EQ(capped.Import(w.Snapshot()), 2u);
  EXPECT_EQ(capped.series_count(), 3u);
}

}  // namespace
}  // namespace crawld::metrics

// metrics/metrics.h: a registry of counters, gauges and fixed-bucket
// histograms with labels, rendered in the Prometheus text exposition format
// 0.0.4 for the admin API's GET /metrics, and exchanged between processes
// as a JSON snapshot (a worker's GET /api/metrics, merged by the supervisor
// into one registry with a worker label: no process ever parses the text
// format).
//
// Its own folder, not http/: any component may count into a registry
// without depending on an HTTP server, and the text format is a data
// format, not a transport. The daemon wires a registry to its routes.
//
// Format: https://prometheus.io/docs/instrumenting/exposition_formats/
// (section "Text-based format"). Deliberate choices:
//  - A counter registered as "x" or "x_total" is exposed as "x_total" on the
//    HELP, TYPE and sample lines alike, because a 0.0.4 parser only ties a
//    sample to its TYPE line when the names are equal.
//  - Families and series are rendered sorted by name and by label values, so
//    that two scrapes of the same state are byte-identical (diffable).
//  - Values are doubles printed in the shortest form that reads back
//    exactly; NaN and infinities as "NaN", "+Inf", "-Inf".
#ifndef CRAWLD_METRICS_METRICS_H_
#define CRAWLD_METRICS_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace crawld::metrics {

// Label name/value pairs of one series, in any order (the registry sorts
// them by name). Names match [a-zA-Z_][a-zA-Z0-9_]* and do not start with
// "__"; values are arbitrary bytes and are escaped on output.
using Labels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing value (events, bytes). Owned by the registry.
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds by. A negative or NaN amount is ignored: a counter that goes down
  // would make rate() report a reset.
  void Increment(double by = 1.0);
  [[nodiscard]] double value() const { return value_; }

 private:
  double value_ = 0;
};

// A value that goes up and down (queue length, open connections).
class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double value) { value_ = value; }
  void Add(double delta) { value_ += delta; }
  [[nodiscard]] double value() const { return value_; }

 private:
  double value_ = 0;
};

// Observations counted into fixed upper-inclusive buckets (v <= bound), plus
// an implicit +Inf bucket, a sum and a count.
class Histogram {
 public:
  // REQUIRES: bounds strictly increasing and finite (the registry checks).
  explicit Histogram(std::vector<double> bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // A NaN observation is ignored (it belongs to no bucket).
  void Observe(double value);

  [[nodiscard]] const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket counts, NOT cumulative; size() == bounds().size() + 1, the
  // last one being the +Inf bucket.
  [[nodiscard]] const std::vector<uint64_t>& bucket_counts() const {
    return counts_;
  }
  [[nodiscard]] uint64_t count() const { return count_; }
  [[nodiscard]] double sum() const { return sum_; }

 private:
  friend class Registry;  // Import() adds another histogram's buckets

  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  double sum_ = 0;
};

// The registry owns every metric it hands out.
//
// Loop affinity: owned by one event loop (the supervisor's or a worker's);
// not thread-safe, since every update and every scrape happens on that loop.
class Registry {
 public:
  struct Options {
    // Upper bound on the number of series over all families; registering
    // one more fails with ResourceExhausted. It keeps a label fed from
    // hostile input (a host name, a status code) from eating memory.
    size_t max_series = 10000;
  };

  // The Content-Type of Render()'s output.
  static constexpr std::string_view kContentType =
      "text/plain; version=0.0.4; charset=utf-8";

  // Prometheus client default buckets (seconds), for latency histograms.
  static std::vector<double> DefaultBuckets();

  Registry() : Registry(Options()) {}
  explicit Registry(const Options& options);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Returns the series of family `name` with these labels, creating the
  // family and the series on first use; later calls with the same name and
  // labels return the same pointer, valid for the registry's lifetime.
  //
  // Fails with InvalidArgument when the name or a label name is invalid,
  // when a label name repeats, when the name is already registered with
  // another type or another set of label names, or (histograms) when the
  // bounds are not strictly increasing finite numbers or differ from the
  // family's, or a label is named "le". Fails with ResourceExhausted past
  // Options::max_series. `help` is kept from the first registration.
  [[nodiscard]] Result<Counter*> GetCounter(std::string_view name,
                                            std::string_view help,
                                            const Labels& labels = {});
  [[nodiscard]] Result<Gauge*> GetGauge(std::string_view name,
                                        std::string_view help,
                                        const Labels& labels = {});
  // An empty `bounds` means DefaultBuckets().
  [[nodiscard]] Result<Histogram*> GetHistogram(std::string_view name,
                                                std::string_view help,
                                                std::vector<double> bounds,
                                                const Labels& labels = {});

  // Registers fn to run at the start of every Render(), on the loop: the
  // place to Set() gauges that are cheaper to read than to maintain (queue
  // sizes, open files). Collectors run in registration order.
  void AddCollector(std::function<void()> fn);

  // Runs the collectors, then returns the whole registry in the text
  // format, one family after another, ending with a newline (or empty).
  [[nodiscard]] std::string Render();

  // Runs the collectors, then returns every series as JSON, for another
  // process to Import():
  //   {"families": [{"name": "x_total", "type": "counter"|"gauge"|
  //                  "histogram", "help": "...", "bounds": [..] (histograms),
  //                  "series": [{"labels": {"k": "v"}, "value": 1}, or for
  //                  histograms {"labels": {..}, "buckets": [per-bucket
  //                  counts, +Inf last, NOT cumulative], "count": n,
  //                  "sum": s}]}]}
  // Names are as exposed (counters with "_total"); families and series in
  // Render()'s order. A non-finite value or sum is the string "NaN",
  // "+Inf" or "-Inf" (JSON has no such numbers). Label values that are not
  // UTF-8 reach the other side with U+FFFD for the bad bytes.
  [[nodiscard]] Json Snapshot();

  // Adds every series of a Snapshot() to this registry, each with the
  // labels of `extra` added (replacing a label of the same name), e.g.
  // {{"worker", "3"}}: counters and gauges add their value, histograms
  // their buckets, count and sum, so series from several sources with the
  // same labels sum. Never fails as a whole: a family or series that is
  // malformed, or that GetCounter/GetGauge/GetHistogram would refuse (a
  // type, label or bucket conflict, max_series), is skipped. Returns the
  // number of series skipped. `snapshot` is untrusted (another process's
  // answer).
  size_t Import(const Json& snapshot, const Labels& extra = {});

  // Number of series over all families.
  [[nodiscard]] size_t series_count() const { return series_count_; }

 private:
  struct Family;
  Result<Family*> FindOrAddFamily(std::string_view name, std::string_view help,
                                  int type, const Labels& labels,
                                  const std::vector<double>* bounds);
  // The family's label values in label-name order, or an error when the
  // names do not match the family's.
  static Result<std::vector<std::string>> LabelValues(const Family& family,
                                                      const Labels& labels);
  struct Series;
  Result<Series*> FindOrAddSeries(Family* family, const Labels& labels);

  Options options_;
  size_t series_count_ = 0;
  std::map<std::string, std::unique_ptr<Family>, std::less<>> families_;
  std::vector<std::function<void()>> collectors_;
};

}  // namespace crawld::metrics

#endif  // CRAWLD_METRICS_METRICS_H_

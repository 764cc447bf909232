// Prometheus text exposition 0.0.4, see metrics.h for the deviations.
#include "metrics/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace crawld::metrics {

namespace {

enum Type { kCounter = 0, kGauge = 1, kHistogram = 2 };

constexpr std::string_view kTypeNames[] = {"counter", "gauge", "histogram"};

bool IsMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool IsLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

void AppendNumber(std::string* out, double v) {
  if (std::isnan(v)) {
    out->append("NaN");
  } else if (std::isinf(v)) {
    out->append(v > 0 ? "+Inf" : "-Inf");
  } else {
    char buf[64];
    // Shortest form that reads back to the same double, so "1" not "1.0"
    // and 0.1 not 0.10000000000000001.
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    out->append(buf, ec == std::errc() ? end : buf);
  }
}

// HELP text escapes only backslash and newline; label values also '"'.
void AppendEscaped(std::string* out, std::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (quote && c == '"') {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}

}  // namespace

void Counter::Increment(double by) {
  if (by > 0) value_ += by;  // false for NaN and negatives
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  const size_t i = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), value) -
      bounds_.begin());
  ++counts_[i];
  ++count_;
  sum_ += value;
}

struct Registry::Series {
  Labels labels;  // sorted by name
  std::unique_ptr<Counter> counter;
  std::unique_ptr<Gauge> gauge;
  std::unique_ptr<Histogram> histogram;
};

struct Registry::Family {
  std::string name;  // as exposed (counters with "_total")
  std::string help;
  int type = kCounter;
  std::vector<std::string> label_names;  // sorted
  std::vector<double> bounds;
  // Keyed by label values in label_names order: renders sorted by them.
  std::map<std::vector<std::string>, Series> series;
};

std::vector<double> Registry::DefaultBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

Registry::Registry(const Options& options) : options_(options) {}
Registry::~Registry() = default;

Result<Registry::Family*> Registry::FindOrAddFamily(
    std::string_view name, std::string_view help, int type,
    const Labels& labels, const std::vector<double>* bounds) {
  if (!IsMetricName(name)) {
    return Status::InvalidArgument("invalid metric name '" + std::string(name) +
                                   "'");
  }
  std::string exposed(name);
  if (type == kCounter && !exposed.ends_with("_total")) exposed += "_total";

  std::vector<std::string> label_names;
  for (const auto& [label, value] : labels) {
    if (!IsLabelName(label)) {
      return Status::InvalidArgument("metric " + exposed +
                                     ": invalid label name '" + label + "'");
    }
    if (type == kHistogram && label == "le") {
      return Status::InvalidArgument("metric " + exposed +
                                     ": label 'le' is reserved");
    }
    label_names.push_back(label);
  }
  std::sort(label_names.begin(), label_names.end());
  if (std::adjacent_find(label_names.begin(), label_names.end()) !=
      label_names.end()) {
    return Status::InvalidArgument("metric " + exposed +
                                   ": repeated label name");
  }

  auto it = families_.find(exposed);
  if (it != families_.end()) {
    Family* f = it->second.get();
    if (f->type != type) {
      return Status::InvalidArgument("metric " + exposed +
                                     " is already registered as a " +
                                     std::string(kTypeNames[f->type]));
    }
    if (f->label_names != label_names) {
      return Status::InvalidArgument("metric " + exposed +
                                     " is registered with other label names");
    }
    if (bounds != nullptr && f->bounds != *bounds) {
      return Status::InvalidArgument("metric " + exposed +
                                     " is registered with other buckets");
    }
    return f;
  }
  auto f = std::make_unique<Family>();
  f->name = std::move(exposed);
  f->help = std::string(help);
  f->type = type;
  f->label_names = std::move(label_names);
  if (bounds != nullptr) f->bounds = *bounds;
  Family* raw = f.get();
  families_.emplace(raw->name, std::move(f));
  return raw;
}

Result<Registry::Series*> Registry::FindOrAddSeries(Family* family,
                                                    const Labels& labels) {
  Labels sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> key;
  key.reserve(sorted.size());
  for (const auto& [name, value] : sorted) key.push_back(value);
  auto it = family->series.find(key);
  if (it != family->series.end()) return &it->second;
  if (series_count_ >= options_.max_series) {
    return Status::ResourceExhausted("metric " + family->name +
                                     ": too many series (max_series)");
  }
  ++series_count_;
  Series& s = family->series[std::move(key)];
  s.labels = std::move(sorted);
  return &s;
}

Result<Counter*> Registry::GetCounter(std::string_view name,
                                      std::string_view help,
                                      const Labels& labels) {
  if (name.ends_with("_total")) name.remove_suffix(6);
  Result<Family*> f = FindOrAddFamily(name, help, kCounter, labels, nullptr);
  if (!f.ok()) return f.status();
  Result<Series*> s = FindOrAddSeries(*f, labels);
  if (!s.ok()) return s.status();
  if (!(*s)->counter) (*s)->counter = std::make_unique<Counter>();
  return (*s)->counter.get();
}

Result<Gauge*> Registry::GetGauge(std::string_view name, std::string_view help,
                                  const Labels& labels) {
  Result<Family*> f = FindOrAddFamily(name, help, kGauge, labels, nullptr);
  if (!f.ok()) return f.status();
  Result<Series*> s = FindOrAddSeries(*f, labels);
  if (!s.ok()) return s.status();
  if (!(*s)->gauge) (*s)->gauge = std::make_unique<Gauge>();
  return (*s)->gauge.get();
}

Result<Histogram*> Registry::GetHistogram(std::string_view name,
                                          std::string_view help,
                                          std::vector<double> bounds,
                                          const Labels& labels) {
  if (bounds.empty()) bounds = DefaultBuckets();
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i - 1] < bounds[i]))) {
      return Status::InvalidArgument(
          "histogram " + std::string(name) +
          ": bucket bounds must be finite and strictly increasing");
    }
  }
  Result<Family*> f = FindOrAddFamily(name, help, kHistogram, labels, &bounds);
  if (!f.ok()) return f.status();
  Result<Series*> s = FindOrAddSeries(*f, labels);
  if (!s.ok()) return s.status();
  if (!(*s)->histogram) {
    (*s)->histogram = std::make_unique<Histogram>(std::move(bounds));
  }
  return (*s)->histogram.get();
}

void Registry::AddCollector(std::function<void()> fn) {
  collectors_.push_back(std::move(fn));
}

namespace {

// Writes `name{labels[,le="bound"]} value\n`.
void AppendSample(std::string* out, std::string_view name, const Labels& labels,
                  const std::string* le, double value) {
  out->append(name);
  if (!labels.empty() || le != nullptr) {
    out->push_back('{');
    bool first = true;
    for (const auto& [label, v] : labels) {
      if (!first) out->push_back(',');
      first = false;
      out->append(label);
      out->append("=\"");
      AppendEscaped(out, v, /*quote=*/true);
      out->push_back('"');
    }
    if (le != nullptr) {
      if (!first) out->push_back(',');
      out->append("le=\"");
      out->append(*le);
      out->push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
  AppendNumber(out, value);
  out->push_back('\n');
}

}  // namespace

std::string Registry::Render() {
  for (const auto& fn : collectors_) fn();
  std::string out;
  for (const auto& [exposed, f] : families_) {
    out.append("# HELP ").append(f->name).push_back(' ');
    AppendEscaped(&out, f->help, /*quote=*/false);
    out.append("\n# TYPE ").append(f->name).push_back(' ');
    out.append(kTypeNames[f->type]).push_back('\n');
    for (const auto& [key, s] : f->series) {
      if (s.counter)
        AppendSample(&out, f->name, s.labels, nullptr, s.counter->value());
      if (s.gauge)
        AppendSample(&out, f->name, s.labels, nullptr, s.gauge->value());
      if (!s.histogram) continue;
      const Histogram& h = *s.histogram;
      const std::string bucket = f->name + "_bucket";
      uint64_t cumulative = 0;
      for (size_t i = 0; i <= h.bounds().size(); ++i) {
        cumulative += h.bucket_counts()[i];
        std::string le;
        if (i < h.bounds().size()) {
          AppendNumber(&le, h.bounds()[i]);
        } else {
          le = "+Inf";
        }
        AppendSample(&out, bucket, s.labels, &le,
                     static_cast<double>(cumulative));
      }
      AppendSample(&out, f->name + "_sum", s.labels, nullptr, h.sum());
      AppendSample(&out, f->name + "_count", s.labels, nullptr,
                   static_cast<double>(h.count()));
    }
  }
  return out;
}

namespace {

// A sample value as JSON: a number, or the text-format spelling of a
// non-finite one.
Json ValueJson(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return v;
}

// The inverse of ValueJson; false for anything else.
bool ValueFrom(const Json* j, double* out) {
  if (j == nullptr) return false;
  if (j->is_number()) {
    *out = j->get<double>();
    return true;
  }
  if (!j->is_string()) return false;
  const std::string& s = j->get_ref<const std::string&>();
  if (s == "NaN") {
    *out = std::nan("");
  } else if (s == "+Inf") {
    *out = INFINITY;
  } else if (s == "-Inf") {
    *out = -INFINITY;
  } else {
    return false;
  }
  return true;
}

Json LabelsJson(const Labels& labels) {
  Json out = Json::object();
  for (const auto& [name, value] : labels) out[name] = value;
  return out;
}

}  // namespace

Json Registry::Snapshot() {
  for (const auto& fn : collectors_) fn();
  Json families = Json::array();
  for (const auto& [exposed, f] : families_) {
    Json fam = Json::object();
    fam["name"] = f->name;
    fam["type"] = kTypeNames[f->type];
    fam["help"] = f->help;
    if (f->type == kHistogram) fam["bounds"] = f->bounds;
    Json series = Json::array();
    for (const auto& [key, s] : f->series) {
      Json one = Json::object();
      one["labels"] = LabelsJson(s.labels);
      if (s.counter) one["value"] = ValueJson(s.counter->value());
      if (s.gauge) one["value"] = ValueJson(s.gauge->value());
      if (s.histogram) {
        one["buckets"] = s.histogram->bucket_counts();
        one["count"] = s.histogram->count();
        one["sum"] = ValueJson(s.histogram->sum());
      }
      series.push_back(std::move(one));
    }
    fam["series"] = std::move(series);
    families.push_back(std::move(fam));
  }
  Json out = Json::object();
  out["families"] = std::move(families);
  return out;
}

size_t Registry::Import(const Json& snapshot, const Labels& extra) {
  const Json* families = json::Find(snapshot, "families");
  if (families == nullptr || !families->is_array()) return 1;
  size_t skipped = 0;
  for (const Json& fam : *families) {
    const Json* name = json::Find(fam, "name");
    const Json* type = json::Find(fam, "type");
    const Json* help = json::Find(fam, "help");
    const Json* series = json::Find(fam, "series");
    if (name == nullptr || !name->is_string() || type == nullptr ||
        !type->is_string() || series == nullptr || !series->is_array()) {
      ++skipped;
      continue;
    }
    const std::string& n = name->get_ref<const std::string&>();
    const std::string& t = type->get_ref<const std::string&>();
    const std::string h = help != nullptr && help->is_string()
                              ? help->get<std::string>()
                              : std::string();
    std::vector<double> bounds;
    if (t == "histogram") {
      const Json* b = json::Find(fam, "bounds");
      bool ok = b != nullptr && b->is_array();
      for (size_t i = 0; ok && i < b->size(); ++i) {
        ok = (*b)[i].is_number();
        if (ok) bounds.push_back((*b)[i].get<double>());
      }
      // Empty bounds would mean the default buckets to GetHistogram.
      if (!ok || bounds.empty()) {
        skipped += series->size();
        continue;
      }
    } else if (t != "counter" && t != "gauge") {
      skipped += series->size();
      continue;
    }
    for (const Json& one : *series) {
      Labels labels = extra;
      const Json* ls = json::Find(one, "labels");
      bool ok = ls != nullptr && ls->is_object();
      if (ok) {
        for (const auto& [k, v] : ls->items()) {
          if (!v.is_string()) {
            ok = false;
            break;
          }
          bool replaced = false;
          for (const auto& [ek, ev] : extra) replaced |= ek == k;
          if (!replaced) labels.emplace_back(k, v.get<std::string>());
        }
      }
      double value = 0;
      if (!ok) {
        ++skipped;
      } else if (t == "counter") {
        auto c = GetCounter(n, h, labels);
        if (c.ok() && ValueFrom(json::Find(one, "value"), &value)) {
          (*c)->Increment(value);
        } else {
          ++skipped;
        }
      } else if (t == "gauge") {
        auto g = GetGauge(n, h, labels);
        if (g.ok() && ValueFrom(json::Find(one, "value"), &value)) {
          (*g)->Add(value);
        } else {
          ++skipped;
        }
      } else {
        const Json* buckets = json::Find(one, "buckets");
        const Json* count = json::Find(one, "count");
        double sum = 0;
        bool good = buckets != nullptr && buckets->is_array() &&
                    buckets->size() == bounds.size() + 1 && count != nullptr &&
                    count->is_number_unsigned() &&
                    ValueFrom(json::Find(one, "sum"), &sum);
        for (size_t i = 0; good && i < buckets->size(); ++i) {
          good = (*buckets)[i].is_number_unsigned();
        }
        Result<Histogram*> hist = Status::InvalidArgument("malformed");
        if (good) hist = GetHistogram(n, h, bounds, labels);
        if (!hist.ok()) {
          ++skipped;
          continue;
        }
        Histogram& into = **hist;
        for (size_t i = 0; i < buckets->size(); ++i) {
          into.counts_[i] += (*buckets)[i].get<uint64_t>();
        }
        into.count_ += count->get<uint64_t>();
        into.sum_ += sum;
      }
    }
  }
  return skipped;
}

}  // namespace crawld::metrics

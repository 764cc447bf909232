#include "recrawl/recrawl.h"

#include <algorithm>
#include <cmath>

#include "checkpoint/checkpoint.h"

namespace crawld::recrawl {

namespace {

// Keys (docs/CHECKPOINT.md, "Recrawl schedule"): "c" + fingerprint
// (8 bytes big-endian) -> Capture; "d" + due_us (8 bytes big-endian, so
// that keys sort by time) + fingerprint -> "". Both are written together.
constexpr char kCapturePrefix = 'c';
constexpr char kDuePrefix = 'd';
constexpr uint8_t kCaptureVersion = 1;         // a page
constexpr uint8_t kCaptureVersionSitemap = 2;  // + kind, sitemap_of

void PutBig64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t GetBig64(std::string_view in) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

std::string CaptureKey(uint64_t fp) {
  std::string k(1, kCapturePrefix);
  PutBig64(&k, fp);
  return k;
}

// Times before the epoch cannot be due: they sort first as 0.
std::string DueKey(int64_t due_us, uint64_t fp) {
  std::string k(1, kDuePrefix);
  PutBig64(&k, static_cast<uint64_t>(std::max<int64_t>(0, due_us)));
  PutBig64(&k, fp);
  return k;
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void PutBytes(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}

// Reads what EncodeCapture wrote; every getter fails once input runs out.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (in_.empty()) return false;
      const auto b = static_cast<uint8_t>(in_.front());
      in_.remove_prefix(1);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool Signed(int64_t* v) {
    uint64_t u = 0;
    if (!Varint(&u)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  bool Bytes(std::string* s) {
    uint64_t n = 0;
    if (!Varint(&n) || n > in_.size()) return false;
    s->assign(in_.substr(0, n));
    in_.remove_prefix(n);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

}  // namespace

Options Sanitize(Options o) {
  auto finite_or = [](double v, double d) { return std::isfinite(v) ? v : d; };
  o.time_scale = std::clamp(finite_or(o.time_scale, 1), 1e-3, 1e9);
  o.min_interval_s = std::clamp(finite_or(o.min_interval_s, 3600), 1e-3, 1e9);
  o.max_interval_s =
      std::clamp(finite_or(o.max_interval_s, 30 * 86400), o.min_interval_s,
                 std::max(o.min_interval_s, 1e9));
  o.initial_interval_s = std::clamp(finite_or(o.initial_interval_s, 86400),
                                    o.min_interval_s, o.max_interval_s);
  o.shrink = std::clamp(finite_or(o.shrink, 0.5), 0.01, 1.0);
  o.grow = std::clamp(finite_or(o.grow, 1.5), 1.0, 100.0);
  return o;
}

double ChangeFreqSeconds(sitemap::ChangeFreq freq, double min_s, double max_s) {
  constexpr double kDay = 86400;
  switch (freq) {
    case sitemap::ChangeFreq::kUnset:
      return 0;
    case sitemap::ChangeFreq::kAlways:
      return min_s;
    case sitemap::ChangeFreq::kHourly:
      return 3600;
    case sitemap::ChangeFreq::kDaily:
      return kDay;
    case sitemap::ChangeFreq::kWeekly:
      return 7 * kDay;
    case sitemap::ChangeFreq::kMonthly:
      return 30 * kDay;
    case sitemap::ChangeFreq::kYearly:
      return 365 * kDay;
    case sitemap::ChangeFreq::kNever:
      return max_s;
  }
  return 0;
}

int64_t NextIntervalUs(const Options& o, int64_t current_us, bool changed,
                       const Steer& steer) {
  const double per_s = 1e6 / o.time_scale;  // real us per simulated second
  double min_s = o.min_interval_s;
  double max_s = o.max_interval_s;
  if (steer.has_rule && steer.rule_min_s > 0 &&
      steer.rule_min_s <= steer.rule_max_s) {
    min_s = steer.rule_min_s;
    max_s = steer.rule_max_s;
  }
  double first_s = ChangeFreqSeconds(steer.changefreq, min_s, max_s);
  if (first_s <= 0) first_s = o.initial_interval_s;
  double next = current_us <= 0 ? first_s * per_s
                : changed       ? static_cast<double>(current_us) * o.shrink
                                : static_cast<double>(current_us) * o.grow;
  next = std::clamp(next, min_s * per_s, max_s * per_s);
  return std::max<int64_t>(1, static_cast<int64_t>(next));
}

std::string EncodeCapture(const Capture& c) {
  std::string out;
  out.push_back(static_cast<char>(kCaptureVersion));
  PutBytes(&out, c.url);
  PutBytes(&out, c.host_key);
  PutBytes(&out, c.seed_host);
  PutVarint(&out, c.depth);
  PutBytes(&out, c.etag);
  PutBytes(&out, c.last_modified);
  PutBytes(&out, c.payload_digest);
  PutBytes(&out, c.record_id);
  PutBytes(&out, c.record_date);
  PutBytes(&out, c.record_uri);
  PutVarint(&out, static_cast<uint64_t>(c.fetched_us));
  PutVarint(&out, static_cast<uint64_t>(c.interval_us));
  PutVarint(&out, static_cast<uint64_t>(c.due_us));
  PutVarint(&out, c.visits);
  PutVarint(&out, c.changes);
  if (c.kind != 0) {
    // Version 2: a sitemap. A page's capture stays byte for byte version 1,
    // which a worker from before sitemap revisits still reads.
    out[0] = static_cast<char>(kCaptureVersionSitemap);
    PutVarint(&out, c.kind);
    PutBytes(&out, c.sitemap_of);
  }
  return out;
}

Result<Capture> DecodeCapture(std::string_view bytes) {
  const uint8_t version = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[0]);
  if (version != kCaptureVersion && version != kCaptureVersionSitemap) {
    return Status::Corruption("recrawl capture: unknown version");
  }
  Reader r(bytes.substr(1));
  Capture c;
  uint64_t depth = 0, visits = 0, changes = 0;
  const bool ok =
      r.Bytes(&c.url) && r.Bytes(&c.host_key) && r.Bytes(&c.seed_host) &&
      r.Varint(&depth) && r.Bytes(&c.etag) && r.Bytes(&c.last_modified) &&
      r.Bytes(&c.payload_digest) && r.Bytes(&c.record_id) &&
      r.Bytes(&c.record_date) && r.Bytes(&c.record_uri) &&
      r.Signed(&c.fetched_us) && r.Signed(&c.interval_us) &&
      r.Signed(&c.due_us) && r.Varint(&visits) && r.Varint(&changes);
  uint64_t kind = 0;
  const bool tail = version == kCaptureVersion
                        ? r.done()
                        : r.Varint(&kind) && kind >= 1 && kind <= 2 &&
                              r.Bytes(&c.sitemap_of) && r.done();
  if (!ok || !tail || depth > UINT16_MAX || visits > UINT32_MAX ||
      changes > UINT32_MAX) {
    return Status::Corruption("recrawl capture: truncated or malformed");
  }
  c.depth = static_cast<uint16_t>(depth);
  c.visits = static_cast<uint32_t>(visits);
  c.changes = static_cast<uint32_t>(changes);
  c.kind = static_cast<uint8_t>(kind);
  return c;
}

Schedule::Schedule(const Options& options,
                   std::unique_ptr<checkpoint::Store> db)
    : options_(options), db_(std::move(db)) {}

Schedule::~Schedule() = default;

Result<std::unique_ptr<Schedule>> Schedule::Open(const std::string& dir,
                                                 const Options& options) {
  checkpoint::Options co;
  co.sync = options.sync;
  co.cache_bytes = options.cache_bytes;
  auto db = checkpoint::Store::Open(dir, co);
  if (!db.ok()) return db.status();
  return std::unique_ptr<Schedule>(
      new Schedule(Sanitize(options), std::move(db).value()));
}

Result<std::optional<Capture>> Schedule::Get(uint64_t fp) const {
  auto v = db_->Get(CaptureKey(fp));
  if (!v.ok()) return v.status();
  if (!v->has_value()) return std::optional<Capture>();
  auto c = DecodeCapture(**v);
  if (!c.ok()) return c.status();
  return std::optional<Capture>(std::move(c).value());
}

Status Schedule::Put(uint64_t fp, const Capture& capture) {
  auto old = Get(fp);
  if (!old.ok()) return old.status();
  checkpoint::Store::Batch batch;
  if (old->has_value()) batch.Delete(DueKey((*old)->due_us, fp));
  batch.Put(CaptureKey(fp), EncodeCapture(capture));
  batch.Put(DueKey(capture.due_us, fp), "");
  return db_->Write(batch);
}

Status Schedule::ForEachDue(
    int64_t now_us, const std::function<bool(uint64_t, Capture)>& visit) const {
  const std::string limit = DueKey(now_us, UINT64_MAX);
  Status inner;
  Status st = db_->ScanPrefix(std::string(1, kDuePrefix),
                              [&](std::string_view key, std::string_view) {
                                if (key.size() != 17 || key > limit)
                                  return false;
                                const uint64_t fp = GetBig64(key.substr(9));
                                auto c = Get(fp);
                                if (!c.ok()) {
                                  inner = c.status();
                                  return false;
                                }
                                // A due key without its capture cannot be
                                // written by Put; skip it rather than stop the
                                // crawl.
                                if (!c->has_value()) return true;
                                return visit(fp, std::move(**c));
                              });
  return st.ok() ? inner : st;
}

Result<std::optional<int64_t>> Schedule::NextDueUs() const {
  std::optional<int64_t> next;
  Status st = db_->ScanPrefix(
      std::string(1, kDuePrefix), [&](std::string_view key, std::string_view) {
        if (key.size() == 17) {
          next = static_cast<int64_t>(GetBig64(key.substr(1)));
        }
        return false;
      });
  if (!st.ok()) return st;
  return next;
}

Status Schedule::Delete(uint64_t fp) {
  auto old = Get(fp);
  if (!old.ok()) return old.status();
  if (!old->has_value()) return Status::Ok();
  checkpoint::Store::Batch batch;
  batch.Delete(DueKey((*old)->due_us, fp));
  batch.Delete(CaptureKey(fp));
  return db_->Write(batch);
}

Result<bool> Schedule::DeleteIfFetchedAt(uint64_t fp, int64_t fetched_us) {
  auto old = Get(fp);
  if (!old.ok()) return old.status();
  if (!old->has_value() || (*old)->fetched_us != fetched_us) return false;
  checkpoint::Store::Batch batch;
  batch.Delete(DueKey((*old)->due_us, fp));
  batch.Delete(CaptureKey(fp));
  if (Status st = db_->Write(batch); !st.ok()) return st;
  return true;
}

Result<bool> Schedule::Merge(uint64_t fp, const Capture& capture) {
  auto old = Get(fp);
  if (!old.ok()) return old.status();
  if (old->has_value() && (*old)->fetched_us >= capture.fetched_us) {
    return false;
  }
  if (Status st = Put(fp, capture); !st.ok()) return st;
  return true;
}

Status Schedule::ForEachCapture(
    std::optional<uint64_t> after,
    const std::function<bool(uint64_t, Capture)>& visit) const {
  if (after.has_value() && *after == UINT64_MAX) return Status::Ok();
  const std::string start = after.has_value() ? CaptureKey(*after + 1)
                                              : std::string(1, kCapturePrefix);
  return db_->ScanPrefixFrom(std::string(1, kCapturePrefix), start,
                             [&](std::string_view key, std::string_view value) {
                               // Neither written by Put: skipped, so that one
                               // bad value cannot stop a sweep for good (its
                               // due key reports it when due).
                               if (key.size() != 9) return true;
                               auto c = DecodeCapture(value);
                               if (!c.ok()) return true;
                               return visit(GetBig64(key.substr(1)),
                                            std::move(c).value());
                             });
}

}  // namespace crawld::recrawl

#include "daemon/recorder.h"

#include "base/time.h"

namespace crawld::daemon {

namespace {

store::FetchRecord ExchangeOf(const std::string& url,
                              const fetcher::Response& r) {
  store::FetchRecord rec;
  rec.target_uri = url;
  rec.ip = r.ip;
  rec.fetch_time_us = r.start_us;
  rec.request_head = r.request_head;
  rec.response_head = r.response_head;
  // An HTTP/1.x exchange is kept as it went over the wire; any other (h2)
  // was turned into HTTP/1.1 syntax by the fetcher, and the records say
  // which protocol it really used (WARC-Protocol; docs/STORE.md, "HTTP/2").
  if (r.protocol != "http/1.1" && r.protocol != "http/1.0") {
    rec.protocol = r.protocol;
  }
  rec.body = &r.body;
  if (r.truncated) {
    // What cut it, as the fetcher saw it: the cap, a timeout, a close.
    rec.truncated = !r.truncated_reason.empty() ? r.truncated_reason
                    : r.error == fetcher::ErrorClass::kTimeout ? "time"
                                                               : "length";
  }
  return rec;
}

}  // namespace

// One fetch's records: what the loop decided, then what the store said.
struct Recorder::Write {
  // Submitted.
  std::string url;
  const fetcher::Response* response = nullptr;
  const PageTask* task = nullptr;
  std::function<void(Status)> done;
  RecrawlWrite recrawl;
  // Decided on the loop.
  store::FetchRecord rec;
  store::PageMetadata meta;
  bool parsed = false;
  const DocumentVerdict* doc = nullptr;  // the task's, or null
  bool revisit = false;
  // No task (robots.txt): look the body up in the earlier crawls off the
  // loop, and write a revisit of the capture found there.
  const Documents* earlier = nullptr;
  bool earlier_hit = false;
  int64_t wall_us = 0;
  bool write_metadata = false;
  bool write_conversion = false;
  // Written off the loop.
  Status status;
  bool response_written = false;  // the response or revisit record is in
  // WriteExchange's answer, for Documents::Recorded (a refused record
  // releases its claim).
  std::optional<Result<store::WrittenExchange>> exchange;
};

Recorder::Recorder(const Options& options, store::WarcWriter* warc,
                   Documents* documents, CrawlStats* stats, EventLog* log,
                   const Clock* clock, WorkPool* pool)
    : options_(options),
      warc_(warc),
      documents_(documents),
      stats_(stats),
      log_(log),
      clock_(clock),
      pool_(pool) {}

Recorder::~Recorder() = default;

void Recorder::Submit(const std::string& url, const fetcher::Response& r,
                      const PageTask* task, std::function<void(Status)> done,
                      const RecrawlWrite& recrawl) {
  auto w = std::make_unique<Write>();
  w->url = url;
  w->response = &r;
  w->task = task;
  w->done = std::move(done);
  w->recrawl = recrawl;
  queue_.push_back(std::move(w));
  if (!busy_ && !holding_) StartNext();
}

void Recorder::WhenIdle(std::function<void()> then) {
  if (!busy_) {
    then();
    return;
  }
  idle_waiters_.push_back(std::move(then));
}

void Recorder::RunIdleWaiters() {
  // Nothing starts while they run: each sees the writer between two
  // writes, even when an earlier one submitted more.
  holding_ = true;
  while (!idle_waiters_.empty()) {
    std::vector<std::function<void()>> waiters;
    waiters.swap(idle_waiters_);
    for (auto& then : waiters) then();
  }
  holding_ = false;
}

void Recorder::StartNext() {
  // Re-entrant: a `done` may submit again, and an idle waiter may run
  // anything. `busy_` is set before either can.
  while (!busy_ && !queue_.empty()) {
    std::shared_ptr<Write> w(std::move(queue_.front()));
    queue_.pop_front();
    if (!disk_failed_.ok()) {
      w->done(disk_failed_);
      continue;
    }
    busy_ = true;
    Decide(*w);
    store::WarcWriter* warc = warc_;
    pool_->Run([w, warc] { Execute(*w, warc); },
               [this, w] {
                 Complete(*w);
                 // Its job ends here, before any idle waiter (a
                 // checkpoint) runs: a checkpoint must never see a job in
                 // flight whose record is already behind the writer's
                 // position. Still busy: a Submit from `done` only queues.
                 w->done(w->status);
                 busy_ = false;
                 RunIdleWaiters();
                 StartNext();
               });
  }
}

void Recorder::Decide(Write& w) {
  const fetcher::Response& r = *w.response;
  w.rec = ExchangeOf(w.url, r);
  w.parsed = w.task != nullptr && w.task->parsed;
  if (w.parsed) {
    w.meta.noindex = w.task->header_robots.noindex || w.task->page.meta_noindex;
    w.meta.nofollow =
        w.task->header_robots.nofollow || w.task->page.meta_nofollow;
    if (w.meta.noindex) stats_->Count("noindex_pages");
    w.meta.canonical = w.task->page.canonical;
  }
  // An exact duplicate of a body stored before (same bytes, any URL, any
  // worker) is a revisit record; its links are still followed (issue 19:
  // the relative links of a copy at another URL point elsewhere).
  w.doc = w.task != nullptr ? &w.task->document : nullptr;
  w.revisit =
      w.doc != nullptr && (w.doc->kind == DocumentVerdict::Kind::kDuplicate ||
                           w.doc->kind == DocumentVerdict::Kind::kEarlier);
  if (w.task == nullptr && documents_->earlier_enabled() &&
      r.status_code >= 200 && r.status_code < 300) {
    w.earlier = documents_;
  }
  if (!w.revisit) {
    if (w.doc != nullptr) {
      w.meta.near_duplicate_of = w.doc->near_duplicate_of;
      w.rec.record_id = w.doc->record_id;
    }
    w.rec.flags.noindex = w.meta.noindex;
    w.rec.flags.near_duplicate_of = w.meta.near_duplicate_of;
  }
  if (!r.framing_note.empty()) {
    stats_->Count("framing_note");
    log_->Write(Level::kInfo, "framing_note",
                {{"url", w.url}, {"note", r.framing_note}});
  }
  if (r.error != fetcher::ErrorClass::kNone) {
    // A response arrived but the transfer was cut (cap, slow body): it is
    // recorded as truncated and counted; its links are still used.
    const std::string cls(fetcher::ErrorClassName(r.error));
    stats_->Count(cls);
    log_->Write(Level::kWarn, "fetch_truncated",
                {{"url", w.url}, {"class", cls}, {"error", r.error_message}});
  }
  if (w.parsed && options_.write_metadata) {
    // application/warc-fields, as Heritrix writes it; recovery reads the
    // outlinks back from it.
    for (const parser::Link& link : w.task->page.links) {
      w.meta.outlinks.push_back({link.url, link.nofollow});
    }
    for (const parser::Link& link : w.task->page.other_links) {
      w.meta.outlinks.push_back({link.url, link.nofollow});
    }
  }
  w.wall_us = clock_->WallUs();
  w.write_metadata = w.parsed && options_.write_metadata;
  w.write_conversion = w.parsed && options_.conversion_records && !w.revisit &&
                       !w.task->page.text.empty();
}

// On a pool thread: touches only `w` and the writer.
void Recorder::Execute(Write& w, store::WarcWriter* warc) {
  std::string response_id;
  if (WriteRecrawlRevisit(w, warc, &response_id)) {
    if (w.status.ok()) WritePageRecords(w, warc, response_id);
    return;
  }
  if (w.earlier != nullptr) {
    Result<store::RevisitOf> of = w.earlier->EarlierOf(*w.response);
    if (of.ok()) {
      auto written = warc->WriteRevisit(w.rec, *of);
      if (!written.ok()) {
        w.status = written.status();
        return;
      }
      w.revisit = true;
      w.earlier_hit = true;
      w.response_written = true;
      return;  // no task: no metadata or conversion record
    }
  }
  if (w.revisit && w.doc->earlier.has_value()) {
    // Of an earlier crawl's capture (dedupe.earlier).
    auto written = warc->WriteRevisit(w.rec, *w.doc->earlier);
    if (!written.ok()) {
      w.status = written.status();
      return;
    }
    response_id = written->revisit.record_id;
    w.response_written = true;
    if (w.recrawl.out != nullptr) {
      w.recrawl.out->payload_digest = w.doc->earlier->payload_digest;
      w.recrawl.out->record_id = w.doc->earlier->record_id;
      w.recrawl.out->record_uri = w.doc->earlier->target_uri;
      w.recrawl.out->record_date = w.doc->earlier->date;
    }
  } else if (w.revisit) {
    const dedupe::DocumentClaim& o = w.doc->original;
    auto written = warc->WriteRevisit(w.rec, o.record_id, o.target_uri,
                                      o.time_us, w.doc->payload_digest);
    if (!written.ok()) {
      w.status = written.status();
      return;
    }
    response_id = written->record_id;
    w.response_written = true;
    if (w.recrawl.out != nullptr) {
      w.recrawl.out->payload_digest = w.doc->payload_digest;
      w.recrawl.out->record_id = o.record_id;
      w.recrawl.out->record_uri = o.target_uri;
      w.recrawl.out->record_date = Iso8601Micros(o.time_us);
    }
  } else {
    w.exchange = warc->WriteExchange(w.rec);
    if (!w.exchange->ok()) {
      w.status = w.exchange->status();
      return;
    }
    response_id = (*w.exchange)->response.record_id;
    w.response_written = true;
    if (w.recrawl.out != nullptr) {
      w.recrawl.out->payload_digest = (*w.exchange)->payload_digest;
      w.recrawl.out->record_id = response_id;
      w.recrawl.out->record_uri = w.url;
      w.recrawl.out->record_date = Iso8601Micros(w.rec.fetch_time_us);
    }
  }
  WritePageRecords(w, warc, response_id);
}

void Recorder::WritePageRecords(Write& w, store::WarcWriter* warc,
                                const std::string& response_id) {
  if (!w.parsed) return;
  if (w.write_metadata) {
    auto written = warc->WriteMetadata(w.url, response_id, w.wall_us,
                                       "application/warc-fields",
                                       store::PageMetadataBlock(w.meta));
    if (!written.ok()) {
      w.status = written.status();
      return;
    }
  }
  if (w.write_conversion) {
    auto conv =
        warc->WriteConversion(w.url, response_id, w.wall_us, w.task->page.text);
    if (!conv.ok()) w.status = conv.status();
  }
}

bool Recorder::WriteRecrawlRevisit(Write& w, store::WarcWriter* warc,
                                   std::string* response_id) {
  const RecrawlWrite& rw = w.recrawl;
  const store::RevisitOf* of = rw.not_modified_of;
  if (of == nullptr && rw.unchanged_of != nullptr && !w.revisit &&
      !w.response->truncated &&
      (w.doc == nullptr || w.doc->kind == DocumentVerdict::Kind::kUnchecked ||
       w.doc->kind == DocumentVerdict::Kind::kUnclaimed)) {
    // No claim names this body, so no claim is left pending by not
    // writing it. Equal SHA-1s: the same payload as the last capture.
    std::optional<std::string_view> view = w.response->body.MemoryView();
    Result<std::string> bytes =
        view.has_value() ? Result<std::string>(std::string())
                         : w.response->body.ReadPrefix(
                               static_cast<size_t>(w.response->body.size()));
    if (bytes.ok() &&
        store::Sha1Digest(view.has_value() ? *view
                                           : std::string_view(*bytes)) ==
            rw.unchanged_of->payload_digest) {
      of = rw.unchanged_of;
    }
  }
  if (of == nullptr) return false;
  // A 304's head is the revisit's block (a body it sent anyway is not
  // kept: a 304 has none, RFC 9110 15.4.5); an unchanged 2xx's head too,
  // its payload being the capture's (WARC-Truncated: length).
  auto written = warc->WriteRevisit(w.rec, *of);
  if (!written.ok()) {
    w.status = written.status();
    return true;
  }
  w.revisit = true;
  w.response_written = true;
  *response_id = written->revisit.record_id;
  if (rw.out != nullptr) {
    rw.out->payload_digest = of->payload_digest;
    rw.out->record_id = of->record_id;
    rw.out->record_uri = of->target_uri;
    rw.out->record_date = of->date;
    rw.out->not_modified = of == rw.not_modified_of;
  }
  return true;
}

void Recorder::Complete(Write& w) {
  if (w.status.code() == Status::Code::kIOError && disk_failed_.ok()) {
    disk_failed_ = w.status;
  }
  if (w.doc != nullptr) {
    documents_->Recorded(
        *w.doc, w.revisit || !w.exchange.has_value() ? nullptr : &*w.exchange);
  }
  if (w.revisit && w.response_written) stats_->Count("revisits");
  if (w.earlier_hit && w.response_written) stats_->Count("dedupe_earlier");
}

}  // namespace crawld::daemon

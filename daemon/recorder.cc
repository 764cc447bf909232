#include "daemon/recorder.h"

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

Status Recorder::Write(const std::string& url, const fetcher::Response& r,
                       const PageTask* task) {
  store::FetchRecord rec = ExchangeOf(url, r);
  const bool parsed = task != nullptr && task->parsed;
  store::PageMetadata meta;
  if (parsed) {
    meta.noindex = task->header_robots.noindex || task->page.meta_noindex;
    meta.nofollow = task->header_robots.nofollow || task->page.meta_nofollow;
    if (meta.noindex) stats_->Count("noindex_pages");
    meta.canonical = task->page.canonical;
  }
  // An exact duplicate of a body stored before (same bytes, any URL, any
  // worker) is a revisit record; its links are still followed (issue 19:
  // the relative links of a copy at another URL point elsewhere).
  const DocumentVerdict* doc = task != nullptr ? &task->document : nullptr;
  const bool revisit =
      doc != nullptr && doc->kind == DocumentVerdict::Kind::kDuplicate;
  std::string response_id;
  if (revisit) {
    documents_->Recorded(*doc, nullptr);
    const dedupe::DocumentClaim& o = doc->original;
    auto written = warc_->WriteRevisit(rec, o.record_id, o.target_uri,
                                       o.time_us, doc->payload_digest);
    if (!written.ok()) return written.status();
    stats_->Count("revisits");
    response_id = written->record_id;
  } else {
    if (doc != nullptr) {
      meta.near_duplicate_of = doc->near_duplicate_of;
      rec.record_id = doc->record_id;
    }
    rec.flags.noindex = meta.noindex;
    rec.flags.near_duplicate_of = meta.near_duplicate_of;
    auto written = warc_->WriteExchange(rec);
    if (doc != nullptr) documents_->Recorded(*doc, &written);
    if (!written.ok()) return written.status();
    response_id = written->response.record_id;
  }
  if (!r.framing_note.empty()) {
    stats_->Count("framing_note");
    log_->Write(Level::kInfo, "framing_note",
                {{"url", url}, {"note", r.framing_note}});
  }
  if (r.error != fetcher::ErrorClass::kNone) {
    // A response arrived but the transfer was cut (cap, slow body): it is
    // recorded as truncated and counted; its links are still used.
    const std::string cls(fetcher::ErrorClassName(r.error));
    stats_->Count(cls);
    log_->Write(Level::kWarn, "fetch_truncated",
                {{"url", url}, {"class", cls}, {"error", r.error_message}});
  }
  if (!parsed) return Status::Ok();
  const int64_t wall = clock_->WallUs();
  if (options_.write_metadata) {
    // application/warc-fields, as Heritrix writes it; recovery reads the
    // outlinks back from it.
    for (const parser::Link& link : task->page.links) {
      meta.outlinks.push_back({link.url, link.nofollow});
    }
    for (const parser::Link& link : task->page.other_links) {
      meta.outlinks.push_back({link.url, link.nofollow});
    }
    auto written =
        warc_->WriteMetadata(url, response_id, wall, "application/warc-fields",
                             store::PageMetadataBlock(meta));
    if (!written.ok()) return written.status();
  }
  if (options_.conversion_records && !revisit && !task->page.text.empty()) {
    auto conv = warc_->WriteConversion(url, response_id, wall, task->page.text);
    if (!conv.ok()) return conv.status();
  }
  return Status::Ok();
}

}  // namespace crawld::daemon

#include "daemon/documents.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "daemon/page_task.h"

namespace crawld::daemon {

Documents::Documents(const Options& options, dedupe::DocumentClaims* claims,
                     store::WarcWriter* warc, WorkPool* pool, CrawlStats* stats,
                     EventLog* log)
    : options_(options),
      claims_(claims),
      warc_(warc),
      pool_(pool),
      stats_(stats),
      log_(log) {
  if (options_.near_duplicate_bits > 0) {
    dedupe::Options no;
    no.near_dup_max_distance = options_.near_duplicate_bits;
    no.near_dup_max_entries = options_.near_max_entries;
    near_ = std::make_unique<dedupe::NearDupIndex>(no);
    near_copies_.reserve(near_->capacity());
  }
}

Documents::~Documents() {
  // The worker drains its loop (and so the pool) before it destroys this;
  // whatever is still queued is settled here, at exit.
  if (!settling_ && !queued_.empty()) ApplySettles(queued_);
}

void Documents::Prepare(PageTask* task) {
  task->documents = this;
  task->want_simhash = near_ != nullptr;
  if (claims_ != nullptr) task->document.record_id = warc_->NewRecordId();
}

void Documents::Check(PageTask* task) const {
  DocumentVerdict& v = task->document;
  const fetcher::Response& r = *task->response;
  if ((claims_ != nullptr || earlier_ != nullptr) && !r.truncated &&
      r.body.size() <= options_.max_body_bytes) {
    // The payload as the writer stores it: the body as received (read in
    // place unless it was spilled to disk).
    std::optional<std::string_view> in_memory = r.body.MemoryView();
    Result<std::string> bytes =
        in_memory.has_value() ? Result<std::string>(std::string())
                              : r.body.ReadPrefix(options_.max_body_bytes);
    const std::string_view body = in_memory.has_value() ? *in_memory
                                  : bytes.ok() ? std::string_view(*bytes)
                                               : std::string_view();
    if (bytes.ok() && earlier_ != nullptr && CheckEarlier(body, &v)) {
      // A revisit of the earlier crawl's capture; nothing to claim.
    } else if (bytes.ok() && claims_ != nullptr) {
      v.digest = dedupe::DocumentDigest128(body);
      dedupe::DocumentClaim proposal;
      proposal.record_id = v.record_id;
      proposal.target_uri = task->url;
      proposal.time_us = r.start_us;
      dedupe::ClaimResult c = claims_->Claim(*v.digest, proposal);
      v.outcome = c.outcome;
      switch (c.outcome) {
        case dedupe::ClaimOutcome::kClaimed: {
          v.kind = DocumentVerdict::Kind::kNew;
          std::lock_guard<std::mutex> l(own_mu_);
          own_ids_.insert(v.record_id);
          break;
        }
        case dedupe::ClaimOutcome::kOwn: {
          std::lock_guard<std::mutex> l(own_mu_);
          if (own_ids_.insert(c.claim.record_id).second) {
            v.kind = DocumentVerdict::Kind::kOwn;
            v.record_id = c.claim.record_id;
            break;
          }
          // This process writes (or wrote) that record already.
          v.outcome = dedupe::ClaimOutcome::kDuplicate;
          [[fallthrough]];
        }
        case dedupe::ClaimOutcome::kDuplicate:
          v.kind = DocumentVerdict::Kind::kDuplicate;
          v.original = std::move(c.claim);
          // Equal bytes have equal SHA-1s: the revisit carries the
          // original's payload digest without reading its record.
          if (v.payload_digest.empty()) {
            v.payload_digest = store::Sha1Digest(body);
          }
          break;
        case dedupe::ClaimOutcome::kFull:
        case dedupe::ClaimOutcome::kUnavailable:
          v.kind = DocumentVerdict::Kind::kUnclaimed;
          v.error = std::move(c.error);
          break;
      }
    }
  }
  if (near_ != nullptr && task->simhash.has_value() &&
      v.kind != DocumentVerdict::Kind::kDuplicate &&
      v.kind != DocumentVerdict::Kind::kEarlier) {
    CheckNear(*task->simhash, task->url, &v);
  }
}

Result<store::RevisitOf> Documents::EarlierOf(
    const fetcher::Response& r) const {
  if (earlier_ == nullptr || r.truncated ||
      r.body.size() > options_.max_body_bytes) {
    return Status::NotFound("not checked");
  }
  std::optional<std::string_view> in_memory = r.body.MemoryView();
  Result<std::string> bytes = in_memory.has_value()
                                  ? Result<std::string>(std::string())
                                  : r.body.ReadPrefix(options_.max_body_bytes);
  if (!bytes.ok()) return bytes.status();
  return earlier_->Find(store::Sha1Digest(
      in_memory.has_value() ? *in_memory : std::string_view(*bytes)));
}

bool Documents::CheckEarlier(std::string_view body, DocumentVerdict* v) const {
  // The SHA-1 the earlier crawl's index holds (WARC-Payload-Digest); the
  // same one a revisit of this crawl carries.
  v->payload_digest = store::Sha1Digest(body);
  Result<store::RevisitOf> of = earlier_->Find(v->payload_digest);
  if (of.ok()) {
    v->kind = DocumentVerdict::Kind::kEarlier;
    v->earlier = std::move(of).value();
    return true;
  }
  if (of.status().code() != Status::Code::kNotFound) {
    v->earlier_error = of.status().ToString();
  }
  return false;
}

void Documents::CheckNear(uint64_t simhash, const std::string& url,
                          DocumentVerdict* v) const {
  std::optional<dedupe::DocumentCopy> copy;
  std::string file;
  {
    std::lock_guard<std::mutex> l(near_mu_);
    const std::optional<dedupe::NearDupIndex::Match> near =
        near_->FindNear(simhash);
    if (!near.has_value()) {
      const dedupe::NearDupIndex::Inserted in = near_->Insert(simhash);
      if (in.evicted.has_value()) near_pending_.erase(*in.evicted);
      if (in.slot == near_copies_.size()) {
        near_copies_.emplace_back();
      } else {
        near_copies_[in.slot] = dedupe::DocumentCopy{};
      }
      near_pending_[simhash] = {url, in.slot};
      v->new_simhash = simhash;
      return;
    }
    if (const dedupe::DocumentCopy& c = near_copies_[near->slot];
        c.length > 0) {
      copy = c;
      if (c.file < files_.size()) file = files_[c.file];
    } else if (auto it = near_pending_.find(near->simhash);
               it != near_pending_.end()) {
      v->near_duplicate_of = it->second.url;  // its record is being written
      return;
    }
  }
  // The reference's URL from its record (off the loop, outside the lock).
  // Not written (the store failed it) or unreadable: "?".
  v->near_duplicate_of = "?";
  if (!copy.has_value() || file.empty()) return;
  Result<store::Record> rec = store::ReadRecordAt(
      options_.warc_dir + "/" + file, copy->offset, copy->length);
  if (!rec.ok()) {
    v->near_unreadable = true;
    return;
  }
  v->near_duplicate_of = rec->Header("WARC-Target-URI");
}

void Documents::Recorded(const DocumentVerdict& v,
                         const Result<store::WrittenExchange>* written) {
  using Kind = DocumentVerdict::Kind;
  if (v.near_unreadable) {
    stats_->Count("stored_copy_unreadable");
    log_->Write(Level::kWarn, "stored_copy_unreadable",
                {{"near_duplicate_of", v.near_duplicate_of}});
  }
  if (!v.near_duplicate_of.empty()) stats_->Count("near_duplicates");
  if (!v.earlier_error.empty()) {
    // Stored in full: a revisit must never point at the wrong record.
    stats_->Count("dedupe_earlier_stale");
    if (earlier_stale_++ % 1000 == 0) {
      log_->Write(Level::kWarn, "dedupe_earlier_stale",
                  {{"error", v.earlier_error},
                   {"pages", std::to_string(earlier_stale_)}});
    }
  }
  switch (v.kind) {
    case Kind::kUnchecked:
    case Kind::kDuplicate:
      break;
    case Kind::kEarlier:
      stats_->Count("dedupe_earlier");
      break;
    case Kind::kNew:
      stats_->Count("dedupe_claimed");
      break;
    case Kind::kOwn:
      // An earlier fetch of this URL claimed the body and never wrote it.
      stats_->Count("dedupe_own_claim");
      break;
    case Kind::kUnclaimed:
      if (v.outcome == dedupe::ClaimOutcome::kFull) {
        stats_->Count("dedupe_full");
      } else {
        // Stored in full, never lost. Logged at the first failure and then
        // every 1000th: a dead Redis fails every page.
        stats_->Count("dedupe_unavailable");
        if (unavailable_++ % 1000 == 0) {
          log_->Write(
              Level::kWarn, "dedupe_unavailable",
              {{"error", v.error}, {"pages", std::to_string(unavailable_)}});
        }
      }
      break;
  }
  const bool claimant = v.kind == Kind::kNew || v.kind == Kind::kOwn;
  Settle s;
  if (claimant && written != nullptr) {
    const Status::Code code =
        written->ok() ? Status::Code::kOk : written->status().code();
    if (code == Status::Code::kOk) {
      s.claimed = true;
      s.stored = true;
      s.position = {(*written)->response.file, (*written)->response.offset};
      unsettled_.insert(s.position);
    } else if (code == Status::Code::kInvalidArgument ||
               code == Status::Code::kResourceExhausted) {
      // Refused: nothing was written and the page is not fetched again.
      s.claimed = true;
      s.stored = false;
    }
    s.digest = *v.digest;
    s.record_id = v.record_id;
  }
  if (claimant && !s.claimed) {
    // Not written (a disk error): the claim stays pending and the page's
    // next fetch writes the body under its id.
    std::lock_guard<std::mutex> l(own_mu_);
    own_ids_.erase(v.record_id);
  }
  if (written == nullptr) return;
  if (v.new_simhash.has_value()) {
    // Written: the reference from now on; else only forgotten as pending.
    s.simhash = v.new_simhash;
    if (written->ok()) {
      const store::RecordRef& ref = (*written)->response;
      s.copy = {ref.offset, 0, 0, static_cast<uint32_t>(ref.length)};
      s.file = ref.file;
    }
  }
  if (!s.claimed && !s.simhash.has_value()) return;
  queued_.push_back(std::move(s));
  if (!settling_) StartSettling();
}

void Documents::Replayed(const store::Record& record) {
  if (claims_ == nullptr || record.type() != "response" ||
      !record.Header("WARC-Truncated").empty()) {
    return;
  }
  // The block is the HTTP head and the body as received, the bytes Check
  // hashed; 2xx only, as only those are claimed.
  const std::string_view block = record.block;
  const size_t head_end = block.find("\r\n\r\n");
  if (head_end == std::string_view::npos || block.size() < 12 ||
      block.compare(0, 5, "HTTP/") != 0) {
    return;
  }
  const size_t sp = block.find(' ');
  if (sp == std::string_view::npos || sp + 1 >= block.size() ||
      block[sp + 1] != '2') {
    return;
  }
  const std::string_view body = block.substr(head_end + 4);
  if (body.size() > options_.max_body_bytes) return;
  // Settled here and now, not queued for the pool: recovery runs before
  // the loop starts its first fetch, and a fetch of the same URL checked
  // before this settle would be told the claim is its own (kOwn) and write
  // a second record under this record's id (recovery.KillNine, seed 2357:
  // a URL queued twice after a restart). A blocking call is fine here, as
  // the WARC reads of the replay around it are.
  const std::string record_id(record.Header("WARC-Record-ID"));
  if (!claims_->Settle(dedupe::DocumentDigest128(body), record_id, true).ok()) {
    stats_->Count("dedupe_settle_failed");
    // Still pending: a record of it exists, so it is never written again.
    std::lock_guard<std::mutex> l(own_mu_);
    own_ids_.insert(record_id);
  }
}

std::optional<std::pair<std::string, uint64_t>> Documents::OldestUnsettled()
    const {
  if (unsettled_.empty()) return std::nullopt;
  return *unsettled_.begin();
}

void Documents::StartSettling() {
  settling_ = true;
  auto batch = std::make_shared<std::vector<Settle>>(std::move(queued_));
  queued_.clear();
  auto failed = std::make_shared<size_t>(0);
  pool_->Run([this, batch, failed] { *failed = ApplySettles(*batch); },
             [this, batch, failed] {
               for (const Settle& s : *batch) {
                 if (s.claimed && s.stored) {
                   unsettled_.erase(unsettled_.find(s.position));
                 }
               }
               settling_ = false;
               if (*failed > 0) stats_->Count("dedupe_settle_failed", *failed);
               if (!queued_.empty()) StartSettling();
             });
}

size_t Documents::ApplySettles(const std::vector<Settle>& batch) {
  size_t failed = 0;
  for (const Settle& s : batch) {
    if (s.claimed) {
      if (claims_->Settle(s.digest, s.record_id, s.stored).ok()) {
        // Settled: the table answers for it from now on.
        std::lock_guard<std::mutex> l(own_mu_);
        own_ids_.erase(s.record_id);
      } else {
        ++failed;
      }
    }
    if (s.simhash.has_value()) {
      std::lock_guard<std::mutex> l(near_mu_);
      // Not pending any more: the index forgot the reference meanwhile
      // (its slot may hold another simhash now).
      if (auto it = near_pending_.find(*s.simhash); it != near_pending_.end()) {
        if (s.copy.length > 0) {
          dedupe::DocumentCopy copy = s.copy;
          copy.file = FileNumber(s.file);
          near_copies_[it->second.slot] = copy;
        }
        near_pending_.erase(it);
      }
    }
  }
  return failed;
}

uint32_t Documents::FileNumber(const std::string& file) {
  // Records go to the newest file, so a new name is always the last one.
  if (files_.empty() || files_.back() != file) files_.push_back(file);
  return static_cast<uint32_t>(files_.size() - 1);
}

}  // namespace crawld::daemon

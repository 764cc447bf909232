#include "daemon/documents.h"

namespace crawld::daemon {

Documents::Documents(const Options& options, CrawlStats* stats, EventLog* log)
    : options_(options), stats_(stats), log_(log), exact_(options.max_exact) {
  if (options_.near_duplicate_bits > 0) {
    dedupe::Options no;
    no.near_dup_max_distance = options_.near_duplicate_bits;
    no.near_dup_max_entries = options_.near_max_entries;
    near_ = std::make_unique<dedupe::NearDupIndex>(no);
    near_copies_ = dedupe::DocumentTable(near_->capacity());
  }
}

uint32_t Documents::FileNumber(const std::string& file) {
  // Records go to the newest file, so a new name is always the last one.
  if (files_.empty() || files_.back() != file) files_.push_back(file);
  return static_cast<uint32_t>(files_.size() - 1);
}

std::optional<store::Record> Documents::Read(const dedupe::DocumentCopy& copy) {
  if (copy.file >= files_.size()) return std::nullopt;
  const std::string path = options_.warc_dir + "/" + files_[copy.file];
  Result<store::Record> rec =
      store::ReadRecordAt(path, copy.offset, copy.length);
  if (!rec.ok()) {
    stats_->Count("stored_copy_unreadable");
    log_->Write(Level::kWarn, "stored_copy_unreadable",
                {{"file", path}, {"error", rec.status().ToString()}});
    return std::nullopt;
  }
  return std::move(rec).value();
}

std::optional<Documents::Original> Documents::FindExact(
    const dedupe::Digest128& digest) {
  const dedupe::DocumentCopy* copy = exact_.Find(digest);
  if (copy == nullptr) return std::nullopt;
  const int64_t time_us = copy->time_us;
  std::optional<store::Record> rec = Read(*copy);
  if (!rec.has_value()) return std::nullopt;
  return Original{rec->Header("WARC-Target-URI"), rec->Header("WARC-Record-ID"),
                  rec->Header("WARC-Payload-Digest"), time_us};
}

Documents::Near Documents::CheckNear(uint64_t simhash) {
  Near out;
  if (near_ == nullptr) return out;
  if (std::optional<uint64_t> near = near_->FindNear(simhash)) {
    const dedupe::DocumentCopy* copy = near_copies_.Find({*near, 0});
    std::optional<store::Record> first =
        copy != nullptr ? Read(*copy) : std::nullopt;
    out.duplicate_of =
        first.has_value() ? first->Header("WARC-Target-URI") : "?";
    stats_->Count("near_duplicates");
    return out;
  }
  near_->Insert(simhash);
  out.is_new = true;
  return out;
}

void Documents::Remember(const std::optional<dedupe::Digest128>& digest,
                         const std::optional<uint64_t>& new_simhash,
                         const store::RecordRef& response, int64_t time_us) {
  const dedupe::DocumentCopy copy{response.offset, time_us,
                                  FileNumber(response.file),
                                  static_cast<uint32_t>(response.length)};
  if (copy.length == 0) return;
  if (digest.has_value()) {
    // Present only when its copy could not be read back: this one serves
    // the next duplicates instead.
    if (!exact_.Replace(*digest, copy)) {
      if (exact_.size() < exact_.max_entries()) {
        exact_.Insert(*digest, copy);
      } else {
        stats_->Count("dedupe_table_full");
      }
    }
  }
  if (new_simhash.has_value()) near_copies_.Insert({*new_simhash, 0}, copy);
}

}  // namespace crawld::daemon

#include "daemon/recovery.h"

#include <algorithm>
#include <cinttypes>
#include <filesystem>
#include <map>
#include <optional>

#include "base/ascii.h"
#include "checkpoint/crawl_state.h"
#include "fetcher/fetcher.h"

namespace crawld::daemon {

std::vector<std::string> OwnWarcFiles(const std::string& warc_dir,
                                      const std::string& prefix,
                                      int worker_id) {
  char id[16];
  snprintf(id, sizeof(id), "-%05d-", worker_id);
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(warc_dir, ec)) {
    const std::string name = e.path().filename().string();
    // <prefix>-<14-digit time>-<5-digit worker>-<serial>.warc.gz
    if (name.ends_with(".warc.gz") && name.rfind(prefix + "-", 0) == 0 &&
        name.size() > prefix.size() + 22 &&
        name.compare(prefix.size() + 15, 7, id) == 0) {
      files.push_back(name);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

// The response the fetcher saw, rebuilt from a response record's block (an
// HTTP message), to follow its links or its redirect again.
std::optional<fetcher::Response> ResponseOf(const store::Record& rec) {
  const size_t head_end = rec.block.find("\r\n\r\n");
  if (head_end == std::string::npos) return std::nullopt;
  fetcher::Response r;
  r.response_head = rec.block.substr(0, head_end + 4);
  std::string_view head(r.response_head);
  const size_t line_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, line_end);
  const size_t sp = status_line.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  r.status_code = atoi(std::string(status_line.substr(sp + 1, 3)).c_str());
  for (size_t p = line_end + 2; p < head.size();) {
    const size_t e = head.find("\r\n", p);
    if (e == std::string_view::npos || e == p) break;
    const std::string_view field = head.substr(p, e - p);
    const size_t colon = field.find(':');
    if (colon != std::string_view::npos) {
      r.headers.emplace_back(
          std::string(field.substr(0, colon)),
          std::string(ascii::TrimHttpSpace(field.substr(colon + 1))));
    }
    p = e + 2;
  }
  (void)r.body.Append(std::string_view(rec.block).substr(head_end + 4));
  return r;
}

}  // namespace

Recovery::Recovery(const Options& options, const Parts& parts)
    : options_(options), parts_(parts) {
  if (parts_.state == nullptr || parts_.hosts == nullptr) return;
  parts_.hosts->SetLoader([store = parts_.state](std::string_view host_key) {
    return checkpoint::LoadRobotsCopy(*store, host_key);
  });
}

// Changed host records: a robots copy or a trap budget, each entry whole
// (the other half from its owner as it is now). The keys of the robots
// copies taken go to `robots_dirty`, to be marked again if the write fails.
Status Recovery::CollectChangedHosts(checkpoint::CrawlState* st,
                                     std::vector<std::string>* robots_dirty) {
  std::map<std::string, checkpoint::HostState> hosts;
  parts_.hosts->TakeDirty(
      [&](const std::string& key,
          const std::optional<checkpoint::RobotsCopy>& copy) {
        hosts[key].robots = copy;
        robots_dirty->push_back(key);
      });
  parts_.traps->ForEachDirty(
      [&](const std::string& key, uint64_t admitted) {
        hosts[key].admitted_urls = admitted;
      },
      [&](uint64_t key, uint32_t variants) {
        st->query_variants.emplace_back(key, variants);
      });
  for (auto& [key, host] : hosts) {
    if (!host.robots.has_value()) {
      // The record may have left memory: its copy is read back from the
      // store, since the entry is written whole.
      Result<std::optional<checkpoint::RobotsCopy>> copy =
          parts_.hosts->CopyOf(key);
      if (!copy.ok()) return copy.status();
      host.robots = std::move(*copy);
    }
    if (host.admitted_urls == 0) {
      host.admitted_urls = parts_.traps->Admitted(key);
    }
    st->hosts.emplace_back(key, std::move(host));
  }
  return Status::Ok();
}

Status Recovery::Checkpoint(const char* why) {
  if (parts_.state == nullptr) return Status::Ok();
  const int64_t t0 = parts_.clock->MonotonicUs();
  if (Status s = parts_.warc->Flush(); !s.ok()) return s;
  checkpoint::CrawlState st;
  st.meta.warc_file = parts_.warc->current_file();
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(
      options_.warc_dir + "/" + st.meta.warc_file, ec);
  st.meta.warc_size = ec ? 0 : size;
  if (parts_.documents != nullptr) {
    if (auto oldest = parts_.documents->OldestUnsettled()) {
      st.meta.settle_file = oldest->first;
      st.meta.settle_offset = oldest->second;
    }
  }
  // The pages in flight go into the frontier's manifest, at the head of
  // their queues: the manifest replaces its predecessor in one atomic step,
  // and the state batch below in another, so a list of them kept in the
  // state could be older than the queues after a kill between the two, and
  // a page popped in between would be in neither (recovery.KillNine lost a
  // seed that way).
  std::vector<std::pair<std::string, frontier::Item>> in_flight;
  parts_.path->ForEachInFlight(
      [&in_flight](const std::string& host_key, const frontier::Item& item) {
        in_flight.emplace_back(host_key, item);
      });
  // The queues are replaced before the seen store is flushed (a URL must
  // never be seen without being queued); the mark says, after a kill
  // between the two, that the queues may be ahead (Recover repairs it).
  if (Status s = parts_.seen->BeginCheckpoint(); !s.ok()) return s;
  if (Status s = parts_.frontier->Checkpoint(in_flight); !s.ok()) return s;
  if (Status s = parts_.seen->Flush(); !s.ok()) return s;

  st.meta.pages = parts_.stats->pages;
  st.meta.bytes = parts_.stats->bytes;
  st.meta.robots_fetches = parts_.stats->robots_fetches;
  st.meta.workers = options_.workers;
  // Recorded URLs still waiting in the queues to be skipped: the queues
  // are checkpointed with them, so the skip list must be too (else a
  // second crash before they come out fetches them again).
  const auto& skip = parts_.path->skip_set();
  st.done.assign(skip.begin(), skip.end());
  if (parts_.peers != nullptr) st.outbox = parts_.peers->Outbox();
  for (const auto& [k, v] : parts_.stats->counts) st.counts.emplace(k, v);

  std::vector<std::string> robots_dirty;
  Status written = CollectChangedHosts(&st, &robots_dirty);
  if (written.ok()) {
    checkpoint::Store::Batch batch;
    checkpoint::EncodeCrawlState(st, &batch);
    written = parts_.state->Write(batch);
  }
  if (!written.ok()) {
    // Not written: the changed records go into the next attempt.
    parts_.hosts->MarkDirty(robots_dirty);
    return written;
  }
  parts_.traps->ClearDirty();
  // Every robots copy is durable now: idle hosts' records may leave memory.
  parts_.hosts->EvictIdle(parts_.clock->MonotonicUs());
  // The checkpoint holds every URL received so far.
  if (parts_.peers != nullptr) parts_.peers->TruncateInboxLog();
  ++checkpoints_;
  parts_.log->Write(
      Level::kInfo, "checkpoint",
      {{"why", why},
       {"queued", std::to_string(parts_.frontier->queued())},
       {"in_flight", std::to_string(in_flight.size())},
       {"warc", st.meta.warc_file + ":" + std::to_string(st.meta.warc_size)},
       {"ms", std::to_string((parts_.clock->MonotonicUs() - t0) / 1000)}});
  return Status::Ok();
}

Result<int> Recovery::Recover() {
  const int64_t t0 = parts_.clock->MonotonicUs();
  const int64_t now = t0;
  const int64_t wall = parts_.clock->WallUs();
  uint64_t robots_restored = 0;
  checkpoint::LoadCallbacks on;
  on.host = [&](std::string_view key, checkpoint::HostState&& host) {
    if (host.robots.has_value()) {
      robots_restored += parts_.hosts->Restore(key, *host.robots, now, wall);
    }
    parts_.traps->RestoreHost(key, host.admitted_urls);
  };
  on.query_variants = [&](uint64_t key, uint32_t variants) {
    parts_.traps->RestoreVariants(key, variants);
  };
  Result<checkpoint::CrawlState> loaded =
      checkpoint::LoadCrawlState(*parts_.state, on);
  if (!loaded.ok()) return loaded.status();
  checkpoint::CrawlState& st = *loaded;
  parts_.stats->pages = st.meta.pages;
  parts_.stats->bytes = st.meta.bytes;
  parts_.stats->robots_fetches = st.meta.robots_fetches;
  for (auto& [k, v] : st.counts) parts_.stats->counts[k] = v;
  for (uint64_t fp : st.done) parts_.path->SkipOnce(fp);
  // In flight at the checkpoint: back to the head of their queues. Only a
  // checkpoint of an earlier version lists them here; they are in the
  // frontier's manifest now (Checkpoint).
  uint64_t requeued = 0;
  for (checkpoint::UrlEntry& e : st.in_flight) {
    frontier::Item item;
    item.fingerprint = url::Fingerprint(e.url);
    item.url = std::move(e.url);
    item.depth = e.depth;
    item.redirects = e.redirects;
    item.retries = e.retries;
    item.credit = e.credit;
    item.seed_host = std::move(e.seed_host);
    if (parts_.frontier->PushFront(e.host_key, std::move(item))) ++requeued;
  }
  // Sent to other workers and not acknowledged at the checkpoint: again.
  if (parts_.peers != nullptr) parts_.peers->Resend(st.outbox);

  // Killed between the queues and the seen store of a checkpoint: the
  // queues hold URLs the seen store does not know, and the replay below
  // would queue them again (fetched twice). They go into it first.
  if (parts_.seen->checkpoint_interrupted()) {
    if (Status s = RepairSeen(); !s.ok()) return s;
  }
  uint64_t truncated = 0;
  if (!st.meta.settle_file.empty() && parts_.documents != nullptr) {
    SettleBefore(st.meta);
  }
  // Nothing is dispatched before every record is replayed (BeginReplay).
  parts_.path->BeginReplay();
  const uint64_t replayed =
      ReplayWarcs(st.meta.warc_file, st.meta.warc_size, &truncated);
  parts_.path->EndReplay();
  parts_.stats->Count("recovered_records", replayed);
  if (parts_.peers != nullptr) parts_.peers->ReplayInboxLog();
  parts_.log->Write(
      Level::kInfo, "recovered",
      {{"queued", std::to_string(parts_.frontier->queued())},
       {"requeued_in_flight", std::to_string(requeued)},
       {"robots_restored", std::to_string(robots_restored)},
       {"replayed_records", std::to_string(replayed)},
       {"truncated_files", std::to_string(truncated)},
       {"ms", std::to_string((parts_.clock->MonotonicUs() - t0) / 1000)}});
  return std::max(1, st.meta.workers);
}

Status Recovery::RepairSeen() {
  uint64_t queued = 0, added = 0;
  Status inserted = Status::Ok();
  Status read = parts_.frontier->ForEachQueued(
      [&](std::string_view host_key, const frontier::Item& item) {
        ++queued;
        Result<bool> fresh =
            parts_.seen->InsertIfNew(SeenHostHash(host_key), item.fingerprint);
        if (!fresh.ok()) {
          inserted = fresh.status();
        } else if (*fresh) {
          ++added;
        }
      });
  parts_.stats->Count("seen_repaired", added);
  parts_.log->Write(Level::kWarn, "seen_repaired",
                    {{"queued", std::to_string(queued)},
                     {"added", std::to_string(added)},
                     {"error", read.ok() ? "" : read.ToString()}});
  // An unreadable chunk is lost to the queue as well (counted by the
  // frontier when its queue reaches it): not a reason to stop.
  return inserted;
}

void Recovery::SettleBefore(const checkpoint::CrawlMeta& meta) {
  uint64_t settled = 0;
  for (const std::string& name : OwnWarcFiles(
           options_.warc_dir, options_.warc_prefix, options_.worker_id)) {
    if (name < meta.settle_file) continue;
    if (!meta.warc_file.empty() && name > meta.warc_file) break;
    auto reader = store::WarcReader::Open(options_.warc_dir + "/" + name);
    if (!reader.ok()) continue;
    const uint64_t from = name == meta.settle_file ? meta.settle_offset : 0;
    const uint64_t to = name == meta.warc_file ? meta.warc_size : UINT64_MAX;
    store::Record rec;
    while (true) {
      auto more = (*reader)->Next(&rec);
      if (!more.ok() || !*more || rec.offset >= to) break;
      if (rec.offset < from) continue;
      parts_.documents->Replayed(rec);
      ++settled;
    }
  }
  parts_.log->Write(
      Level::kInfo, "claims_settled",
      {{"records", std::to_string(settled)},
       {"from", meta.settle_file + ":" + std::to_string(meta.settle_offset)}});
}

uint64_t Recovery::ReplayWarcs(const std::string& from_file,
                               uint64_t from_offset, uint64_t* truncated) {
  uint64_t replayed = 0;
  std::error_code ec;
  // A page's record, held until the record after it says whether a
  // metadata record (its outlinks) belongs to it.
  std::optional<store::Record> pending;
  auto flush = [&](const store::PageMetadata* meta) {
    if (!pending.has_value()) return;
    // Written, maybe not settled by a process killed right after.
    if (parts_.documents != nullptr) parts_.documents->Replayed(*pending);
    std::optional<fetcher::Response> response;
    if (meta == nullptr && pending->type() == "response") {
      response = ResponseOf(*pending);
    }
    parts_.path->Replay(pending->Header("WARC-Target-URI"),
                        response.has_value() ? &*response : nullptr, meta);
    ++replayed;
    pending.reset();
  };
  for (const std::string& name : OwnWarcFiles(
           options_.warc_dir, options_.warc_prefix, options_.worker_id)) {
    if (!from_file.empty() && name < from_file) continue;
    const std::string path = options_.warc_dir + "/" + name;
    const uint64_t before = std::filesystem::file_size(path, ec);
    auto cut = store::TruncateToLastCompleteRecord(path);
    if (cut.ok() && *cut < before) {
      ++*truncated;
      parts_.log->Write(
          Level::kWarn, "warc_tail_truncated",
          {{"file", name}, {"bytes", std::to_string(before - *cut)}});
    }
    if (cut.ok() && *cut == 0 && name != parts_.warc->current_file()) {
      // Its process was killed before the file's first record (warcinfo)
      // reached the disk: nothing in it, and an empty file is no WARC
      // (recovery.KillNine, seed 77643, a kill during a slow start). Its
      // index can only be empty too.
      std::filesystem::remove(path, ec);
      if (!options_.index_dir.empty()) {
        std::filesystem::remove(options_.index_dir + "/" + name + ".cdxj", ec);
      }
      parts_.log->Write(Level::kWarn, "warc_empty_removed", {{"file", name}});
      continue;
    }
    auto reader = store::WarcReader::Open(path);
    if (!reader.ok()) continue;
    const uint64_t from = name == from_file ? from_offset : 0;
    store::Record rec;
    while (true) {
      auto more = (*reader)->Next(&rec);
      if (!more.ok() || !*more) break;
      if (rec.offset < from) continue;
      const std::string type = rec.type();
      if (type == "metadata" && pending.has_value() &&
          rec.Header("WARC-Concurrent-To") ==
              pending->Header("WARC-Record-ID")) {
        const store::PageMetadata meta =
            store::ParsePageMetadataBlock(rec.block);
        flush(&meta);
        continue;
      }
      if (type == "response" || type == "revisit") {
        flush(nullptr);
        pending = rec;
      }
    }
    flush(nullptr);
  }
  return replayed;
}

}  // namespace crawld::daemon

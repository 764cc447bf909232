#include "checkpoint/checkpoint.h"

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

namespace crawld::checkpoint {
namespace {

// LevelDB reports a missing database as InvalidArgument ("does not exist
// (create_if_missing is false)"), and a held LOCK as IOError.
Status Translate(const leveldb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  std::string msg(what);
  msg += ": ";
  msg += s.ToString();
  if (s.IsNotFound()) return Status::NotFound(std::move(msg));
  if (s.IsCorruption()) return Status::Corruption(std::move(msg));
  if (s.IsIOError()) return Status::IOError(std::move(msg));
  if (s.IsInvalidArgument()) {
    if (msg.find("does not exist") != std::string::npos) {
      return Status::NotFound(std::move(msg));
    }
    return Status::InvalidArgument(std::move(msg));
  }
  if (s.IsNotSupportedError()) {
    return Status::FailedPrecondition(std::move(msg));
  }
  return Status::Internal(std::move(msg));
}

leveldb::Slice ToSlice(std::string_view s) {
  return leveldb::Slice(s.data(), s.size());
}

std::string_view ToView(const leveldb::Slice& s) {
  return std::string_view(s.data(), s.size());
}

}  // namespace

struct Store::Rep {
  // Declared before db so that it outlives it: the DB uses the cache.
  std::unique_ptr<leveldb::Cache> cache;
  std::unique_ptr<leveldb::DB> db;
  leveldb::WriteOptions write_options;
};

Store::Store(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::Open(const std::string& dir,
                                           const Options& options) {
  if (dir.empty()) return Status::InvalidArgument("checkpoint: empty dir");
  if (options.create_if_missing) {
    // LevelDB creates only the last path component.
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return Status::IOError("checkpoint: create " + dir + ": " + ec.message());
    }
  }
  auto rep = std::make_unique<Rep>();
  rep->cache.reset(leveldb::NewLRUCache(
      std::max<size_t>(options.cache_bytes, size_t{1} << 20)));
  leveldb::Options lo;
  lo.create_if_missing = options.create_if_missing;
  lo.paranoid_checks = true;  // report corruption instead of skipping it
  lo.block_cache = rep->cache.get();
  lo.write_buffer_size = std::clamp<size_t>(options.write_buffer_bytes,
                                            size_t{64} << 10, size_t{1} << 30);
  leveldb::DB* db = nullptr;
  leveldb::Status s = leveldb::DB::Open(lo, dir, &db);
  if (!s.ok()) return Translate(s, "checkpoint: open " + dir);
  rep->db.reset(db);
  rep->write_options.sync = options.sync;
  return std::unique_ptr<Store>(new Store(std::move(rep)));
}

void Store::Batch::Put(std::string_view key, std::string_view value) {
  bytes_ += key.size() + value.size();
  ops_.push_back(Op{false, std::string(key), std::string(value)});
}

void Store::Batch::Delete(std::string_view key) {
  bytes_ += key.size();
  ops_.push_back(Op{true, std::string(key), std::string()});
}

void Store::Batch::Clear() {
  ops_.clear();
  bytes_ = 0;
}

Status Store::Write(const Batch& batch) {
  // One leveldb::WriteBatch is one log record: that is the atomicity.
  leveldb::WriteBatch wb;
  for (const Batch::Op& op : batch.ops_) {
    if (op.is_delete) {
      wb.Delete(ToSlice(op.key));
    } else {
      wb.Put(ToSlice(op.key), ToSlice(op.value));
    }
  }
  return Translate(rep_->db->Write(rep_->write_options, &wb),
                   "checkpoint: write");
}

Result<std::optional<std::string>> Store::Get(std::string_view key) const {
  std::string value;
  leveldb::Status s =
      rep_->db->Get(leveldb::ReadOptions(), ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return Translate(s, "checkpoint: get");
  return std::optional<std::string>(std::move(value));
}

Status Store::ScanPrefix(
    std::string_view prefix,
    const std::function<bool(std::string_view, std::string_view)>& visit)
    const {
  return ScanPrefixFrom(prefix, prefix, visit);
}

Status Store::ScanPrefixFrom(
    std::string_view prefix, std::string_view start,
    const std::function<bool(std::string_view, std::string_view)>& visit)
    const {
  leveldb::ReadOptions ro;
  ro.fill_cache = false;  // a scan would evict the hot point-read blocks
  std::unique_ptr<leveldb::Iterator> it(rep_->db->NewIterator(ro));
  for (it->Seek(ToSlice(std::max(prefix, start))); it->Valid(); it->Next()) {
    const std::string_view key = ToView(it->key());
    if (key.substr(0, prefix.size()) != prefix) break;
    if (!visit(key, ToView(it->value()))) break;
  }
  return Translate(it->status(), "checkpoint: scan");
}

}  // namespace crawld::checkpoint

// checkpoint/checkpoint.h: the worker's durable key/value state, a thin layer
// over LevelDB (https://github.com/google/leveldb/blob/main/doc/index.md).
//
// A checkpoint is one atomic write batch (ARCHITECTURE.md, "State on disk"):
// either every put and delete of a Batch is visible after a crash and
// reopen, or none is. Keys are compared bytewise, so prefix scans return keys
// in memcmp order; callers encode numbers big-endian when order matters.
//
// The store holds bytes; the crawl state a worker keeps in it, its key
// layout and value formats are checkpoint/crawl_state.h, specified in
// docs/CHECKPOINT.md. leveldb types never leave this component: errors are
// translated into crawld::Status.
#ifndef CRAWLD_CHECKPOINT_CHECKPOINT_H_
#define CRAWLD_CHECKPOINT_CHECKPOINT_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace crawld::checkpoint {

struct Options {
  // --- Behaviour ---

  // fsync every Write() before it returns. With false, a process crash
  // loses nothing, but a machine crash may lose the last writes (never part
  // of a batch).
  bool sync = true;
  // Create the database when `dir` holds none (otherwise Open fails with
  // kNotFound).
  bool create_if_missing = true;

  // --- Performance ---

  // LevelDB block cache (bytes). Clamped to >= 1 MiB.
  size_t cache_bytes = 8 << 20;
  // LevelDB memtable size before a flush to disk (bytes). Clamped to
  // [64 KiB, 1 GiB].
  size_t write_buffer_bytes = 4 << 20;
};

// A thin LevelDB store: atomic write batches of key/value puts and deletes,
// point reads, prefix scans.
// Thread-safe (LevelDB is), but meant for one worker loop. Every call blocks
// on disk I/O; the worker calls it at checkpoints, not per URL. Not copyable.
class Store {
 public:
  // Opens (creating per Options) the database in directory `dir`. Fails
  // with kIOError if the directory cannot be created or is locked by
  // another open Store (in this or another process), kNotFound if it holds
  // no database and create_if_missing is false, kCorruption if it is
  // damaged. The caller owns the Store; closing it is destroying it.
  [[nodiscard]] static Result<std::unique_ptr<Store>> Open(
      const std::string& dir, const Options& options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // An ordered list of puts and deletes, applied all at once by Write().
  // Later operations on a key override earlier ones. Copies its arguments.
  class Batch {
   public:
    void Put(std::string_view key, std::string_view value);
    void Delete(std::string_view key);
    void Clear();
    // Operations in the batch (count).
    size_t size() const { return ops_.size(); }
    // Key and value bytes in the batch (bytes).
    size_t bytes() const { return bytes_; }

   private:
    friend class Store;
    struct Op {
      bool is_delete;
      std::string key;
      std::string value;
    };
    std::vector<Op> ops_;
    size_t bytes_ = 0;
  };

  // Applies every operation of `batch` atomically (and durably when
  // Options::sync). On failure nothing of the batch is visible. The batch
  // is not modified.
  [[nodiscard]] Status Write(const Batch& batch);

  // The value of `key`; nullopt when absent; an error Status on I/O failure
  // or corruption. The returned string is the caller's.
  [[nodiscard]] Result<std::optional<std::string>> Get(
      std::string_view key) const;

  // Calls `visit` for every key starting with `prefix`, in ascending
  // bytewise key order, over a consistent snapshot taken at the call; stops
  // early when `visit` returns false (still OK). The views are valid only
  // during that call of `visit`. An empty prefix scans everything.
  // Returns the first I/O or corruption error met.
  [[nodiscard]] Status ScanPrefix(
      std::string_view prefix,
      const std::function<bool(std::string_view key, std::string_view value)>&
          visit) const;

  // As ScanPrefix, from the first key >= `start` (keys of `prefix` only):
  // a scan resumed where an earlier one stopped costs no rescan.
  [[nodiscard]] Status ScanPrefixFrom(
      std::string_view prefix, std::string_view start,
      const std::function<bool(std::string_view key, std::string_view value)>&
          visit) const;

 private:
  struct Rep;
  explicit Store(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace crawld::checkpoint

#endif  // CRAWLD_CHECKPOINT_CHECKPOINT_H_

// ClaimTable: the document claims of one machine in a shared file. See
// dedupe.h for the contract and docs/STORE.md ("Document dedupe") for the
// layout in prose.
//
// File layout (this machine's ABI: every user is the same binary on the
// same machine):
//   Header                  at 0, one 4096-byte page
//   Bucket[buckets]         at 4096, 640 bytes each
//   text area               at 4096 + buckets x 640, text_capacity bytes
// Bucket = robust process-shared mutex | tag[14] | used | Slot[14].
// A slot's text is one byte (the record id's length), the record id, the
// URI; the slot points at it with (offset << 24 | length).
//
// Only the header and the buckets are mapped. The text area is written
// and read with pwrite and pread: its bytes grow with every document the
// crawl claims (about 120 a claim, 120 MB over a million pages), and
// mapped, each worker that touched them carried them in its resident set
// for the rest of the crawl. Through the file they are the kernel's page
// cache alone, the same bytes every process sees, at a system call per
// claim and per settle.
//
// Every slot field is read and written under its bucket's mutex. The order
// of the writes is what makes a process killed mid-way harmless: a new
// slot's text, then its fields and checksum, then its state, then its tag;
// a release clears the tag before the state. Repair (the next locker after
// a death) trusts the state alone and rebuilds the tags from it, so a slot
// is either entirely there or entirely absent. Why a mutex per bucket and
// not lock-free slots: a claim reads and writes a whole slot and its text,
// more than one compare-and-swap covers, and the robust mutex tells the
// next locker that a process died inside (frontier/ip_slots.cc, which this
// follows, measured the same cost uncontended).
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/fd_io.h"
#include "dedupe/bloom_internal.h"
#include "dedupe/dedupe.h"

namespace crawld::dedupe {

namespace {

constexpr char kMagic[8] = {'C', 'R', 'W', 'L', 'D', 'O', 'C', 'S'};
constexpr uint32_t kVersion = 1;
constexpr int kSlots = 14;
constexpr uint64_t kHeaderBytes = 4096;
// A digest goes to a bucket with room; sized so that max_documents fill
// at most this share of the slots (two choices keep misses rare below it).
constexpr double kFill = 0.9;
constexpr uint64_t kMaxTextLength = (uint64_t{1} << 24) - 1;
constexpr uint64_t kMaxTextOffset = uint64_t{1} << 40;

enum State : uint32_t {
  kEmpty = 0,
  kPending = 1,
  kStored = 2,
  kUpdating = 3,  // a pending claim's time is being rewritten
};

// Seeds: the two buckets and the tag come from unrelated hashes.
constexpr uint64_t kSeedA = 0x243f6a8885a308d3ULL;
constexpr uint64_t kSeedB = 0x13198a2e03707344ULL;
constexpr uint64_t kSeedTag = 0xa4093822299f31d0ULL;

uint64_t BootHash() {
  char buf[64] = {};
  const int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  return n > 0 ? XXH3_64bits(buf, static_cast<size_t>(n)) : 0;
}

uint8_t TagOf(const Digest128& d) {
  const auto t = static_cast<uint8_t>(internal::Mix(d.low ^ kSeedTag));
  return t == 0 ? 1 : t;
}

// Stops the compiler from moving the writes before it past the writes
// after it; a process killed between them leaves them in this order (x86
// and ARM keep a single thread's stores to shared memory visible in program
// order once the compiler does).
void Order() { std::atomic_thread_fence(std::memory_order_release); }

std::string Errno(const std::string& what) {
  return "claim table: " + what + ": " + std::strerror(errno);
}

// A slot's text, as ValidText read it: its record id and its URI.
void SplitText(const std::string& raw, std::string* record_id,
               std::string* uri) {
  const auto id_len = static_cast<uint8_t>(raw[0]);
  record_id->assign(raw, 1, id_len);
  uri->assign(raw, 1 + size_t{id_len});
}

}  // namespace

struct ClaimTable::Header {
  char magic[8];  // written last when a table is created
  uint32_t version;
  uint32_t slots_per_bucket;
  uint32_t slot_size;
  uint32_t bucket_size;
  uint64_t buckets;
  uint64_t text_offset;
  uint64_t text_capacity;
  uint64_t max_documents;         // as asked when created
  uint64_t boot_hash;             // xxh3 of the boot id whose processes use it
  std::atomic<uint64_t> entries;  // digests held (approximate)
  std::atomic<uint64_t> text_used;  // bump pointer of the text area
};
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "the header's counters are shared between processes");

struct ClaimTable::Slot {
  uint64_t key_high;
  uint64_t key_low;
  int64_t time_us;
  uint64_t text;  // offset in the text area << 24 | length
  uint32_t state;
  uint32_t check;  // low 32 bits of CheckOf(): torn writes of a crash
};

struct alignas(64) ClaimTable::Bucket {
  pthread_mutex_t mu;
  uint8_t tags[kSlots];  // 0: free; else a byte of the digest's hash
  uint16_t used;
  Slot slots[kSlots];
};

namespace {

uint32_t CheckOf(uint64_t high, uint64_t low, int64_t time_us, uint64_t text,
                 const char* bytes, size_t n) {
  const uint64_t seed = internal::Mix(
      high ^ internal::Mix(low ^ internal::Mix(static_cast<uint64_t>(time_us) ^
                                               internal::Mix(text))));
  return static_cast<uint32_t>(XXH3_64bits_withSeed(bytes, n, seed));
}

uint64_t BucketsFor(uint64_t max_documents) {
  const auto n = static_cast<uint64_t>(
      static_cast<double>(max_documents) / (kSlots * kFill) + 1);
  return std::max<uint64_t>(n, 2);
}

// [0, n) from a uniform 64-bit hash, without a modulo's bias or cost.
uint64_t Reduce(uint64_t h, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(h) * n) >> 64);
}

}  // namespace

// The mutexes of a digest's two buckets, taken in index order (so two
// processes never wait for each other); a bucket whose last locker died
// inside is repaired before use.
class ClaimTable::Locked {
 public:
  Locked(ClaimTable* t, uint64_t a, uint64_t b) : t_(t) {
    const uint64_t lo = std::min(a, b), hi = std::max(a, b);
    first_ = Lock(lo);
    if (first_ != nullptr && hi != lo) {
      second_ = Lock(hi);
      if (second_ == nullptr) {
        pthread_mutex_unlock(&first_->mu);
        first_ = nullptr;
      }
    }
  }
  ~Locked() {
    if (second_ != nullptr) pthread_mutex_unlock(&second_->mu);
    if (first_ != nullptr) pthread_mutex_unlock(&first_->mu);
  }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;
  // False when a mutex could not be taken (the caller answers
  // kUnavailable): a mutex left unrecoverable, which the repair below
  // never does.
  bool ok() const { return first_ != nullptr; }

 private:
  Bucket* Lock(uint64_t i) {
    Bucket& b = t_->BucketAt(i);
    const int rc = pthread_mutex_lock(&b.mu);
    if (rc == EOWNERDEAD) {
      t_->Repair(b);
      pthread_mutex_consistent(&b.mu);
      t_->repaired_.fetch_add(1, std::memory_order_relaxed);
      return &b;
    }
    return rc == 0 ? &b : nullptr;
  }

  ClaimTable* t_;
  Bucket* first_ = nullptr;
  Bucket* second_ = nullptr;
};

Result<std::unique_ptr<ClaimTable>> ClaimTable::Open(const Options& options) {
  const std::string& path = options.claims_path;
  if (path.empty()) return Status::InvalidArgument("claim table: empty path");
  std::error_code ec;
  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return Status::IOError("claim table: " + ec.message());

  const uint64_t max_documents =
      std::clamp<uint64_t>(options.max_documents, 1024, uint64_t{1} << 32);
  const uint64_t want_text =
      std::clamp<uint64_t>(options.claim_text_bytes, 64 << 10, kMaxTextOffset);
  const uint64_t want_buckets = BucketsFor(max_documents);
  const uint64_t want_text_offset =
      kHeaderBytes + want_buckets * sizeof(Bucket);
  const uint64_t want_size = want_text_offset + want_text;
  const uint64_t boot = BootHash();

  // Each try: the first opener alone (an exclusive flock it can take at
  // once) creates, re-creates after a creator that died mid-way, or
  // re-initializes after a reboot; everyone then holds a shared flock for
  // as long as the table is open. A creator writes the magic last, so a
  // table without it is unfinished.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return Status::IOError(Errno(path));
    bool alone = flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (!alone && flock(fd, LOCK_SH) != 0) {
      Status s = Status::IOError(Errno("flock " + path));
      close(fd);
      return s;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      Status s = Status::IOError(Errno(path));
      close(fd);
      return s;
    }
    uint64_t size = static_cast<uint64_t>(st.st_size);
    bool fresh = false;
    if (size < kHeaderBytes) {
      if (!alone) {  // an unfinished file whose creator died: try again
        close(fd);
        usleep(10'000);
        continue;
      }
      if (ftruncate(fd, 0) != 0 ||
          ftruncate(fd, static_cast<off_t>(want_size)) != 0) {
        Status s = Status::IOError(Errno("size " + path));
        close(fd);
        return s;
      }
      // Every bucket is written below (its mutex), so its blocks are taken
      // now: a store on a page of a sparse file on a full disk is a SIGBUS,
      // where this is a clear error before the crawl starts.
      if (const int err =
              posix_fallocate(fd, 0, static_cast<off_t>(want_text_offset));
          err != 0) {
        (void)ftruncate(fd, 0);
        close(fd);
        return Status::IOError(
            "claim table: " + path + ": cannot take " +
            std::to_string(want_text_offset >> 20) + " MiB for " +
            std::to_string(max_documents) +
            " documents (dedupe.max_documents): " + std::strerror(err));
      }
      size = want_size;
      fresh = true;
    }
    // The header and the buckets: an existing table's header says where
    // they end. A header that says nothing sane maps alone, and the checks
    // below reject the file or try again.
    uint64_t mapped = want_text_offset;
    if (!fresh) {
      mapped = kHeaderBytes;
      void* head = mmap(nullptr, kHeaderBytes, PROT_READ, MAP_SHARED, fd, 0);
      if (head != MAP_FAILED) {
        const auto* h = static_cast<const Header*>(head);
        if (std::memcmp(h->magic, kMagic, sizeof(kMagic)) == 0 &&
            h->text_offset > kHeaderBytes && h->text_offset <= size) {
          mapped = h->text_offset;
        }
        munmap(head, kHeaderBytes);
      }
    }
    void* base =
        mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
      Status s = Status::IOError(Errno("mmap " + path));
      close(fd);
      return s;
    }
    auto* h = static_cast<Header*>(base);
    const bool has_magic = std::memcmp(h->magic, kMagic, sizeof(kMagic)) == 0;
    if (!fresh && !has_magic) {
      const bool blank = std::all_of(h->magic, h->magic + sizeof(h->magic),
                                     [](char c) { return c == 0; });
      munmap(base, mapped);
      if (!blank) {
        close(fd);
        return Status::Corruption("claim table: " + path +
                                  ": not a claim table");
      }
      if (alone) {
        // A creator died before finishing: start over.
        if (ftruncate(fd, 0) != 0) {
          Status s = Status::IOError(Errno("truncate " + path));
          close(fd);
          return s;
        }
      } else {
        usleep(10'000);
      }
      close(fd);
      continue;
    }
    std::unique_ptr<ClaimTable> t(
        new ClaimTable(base, mapped, fd, !fresh && size != want_size));
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    if (fresh) {
      h->version = kVersion;
      h->slots_per_bucket = kSlots;
      h->slot_size = sizeof(Slot);
      h->bucket_size = sizeof(Bucket);
      h->buckets = want_buckets;
      h->text_offset = want_text_offset;
      h->text_capacity = want_text;
      h->max_documents = max_documents;
      h->boot_hash = boot;
      for (uint64_t i = 0; i < want_buckets; ++i) {
        pthread_mutex_init(&t->BucketAt(i).mu, &attr);
      }
      Order();
      std::memcpy(h->magic, kMagic, sizeof(kMagic));
    } else {
      const bool shape_ok =
          h->version == kVersion && h->slots_per_bucket == kSlots &&
          h->slot_size == sizeof(Slot) && h->bucket_size == sizeof(Bucket) &&
          h->buckets >= 2 &&
          h->text_offset == kHeaderBytes + h->buckets * sizeof(Bucket) &&
          h->text_capacity <= kMaxTextOffset &&
          size == h->text_offset + h->text_capacity;
      if (!shape_ok) {
        pthread_mutexattr_destroy(&attr);
        return Status::Corruption("claim table: " + path +
                                  ": not a claim table of this version");
      }
      if (h->boot_hash != boot) {
        if (!alone) {
          pthread_mutexattr_destroy(&attr);
          return Status::FailedPrecondition(
              "claim table: " + path +
              ": in use by processes of an earlier boot");
        }
        // A reboot: the mutexes may hold owners that no longer exist, and
        // the kernel wrote the pages back in no particular order. Every
        // mutex anew, every slot checked, the text area's end found again.
        uint64_t entries = 0;
        uint64_t text_end = 0;
        for (uint64_t i = 0; i < h->buckets; ++i) {
          Bucket& b = t->BucketAt(i);
          pthread_mutex_init(&b.mu, &attr);
          t->Repair(b);
          entries += b.used;
          for (int k = 0; k < kSlots; ++k) {
            if (b.tags[k] == 0) continue;
            const uint64_t end =
                (b.slots[k].text >> 24) + (b.slots[k].text & kMaxTextLength);
            text_end = std::max(text_end, end);
          }
        }
        h->entries.store(entries);
        h->text_used.store(std::max(h->text_used.load(), text_end));
        Order();
        h->boot_hash = boot;
      }
    }
    pthread_mutexattr_destroy(&attr);
    if (alone && flock(fd, LOCK_SH) != 0) {
      return Status::IOError(Errno("flock " + path));
    }
    return t;
  }
  return Status::IOError("claim table: " + path +
                         ": its creator keeps dying; remove the file");
}

ClaimTable::ClaimTable(void* base, uint64_t mapped_bytes, int fd,
                       bool size_from_file)
    : base_(base),
      mapped_bytes_(mapped_bytes),
      fd_(fd),
      size_from_file_(size_from_file) {
  // The layout docs/STORE.md describes.
  static_assert(sizeof(Header) <= kHeaderBytes);
  static_assert(sizeof(Slot) == 40);
  static_assert(sizeof(Bucket) == 640);
}

bool ClaimTable::TextBacked(uint64_t end) {
  if (end <= text_backed_.load(std::memory_order_relaxed)) return true;
  // The text area is sparse: its blocks are taken a chunk at a time before
  // any byte is stored there, so a full disk makes Claim answer kFull
  // rather than the store a SIGBUS. Taking blocks another process took
  // already is cheap, so each process keeps only its own mark.
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  const auto* h = static_cast<const Header*>(base_);
  const uint64_t upto =
      std::min(h->text_capacity, (end + kChunk - 1) / kChunk * kChunk);
  if (posix_fallocate(fd_, static_cast<off_t>(h->text_offset),
                      static_cast<off_t>(upto)) != 0) {
    return false;
  }
  uint64_t seen = text_backed_.load(std::memory_order_relaxed);
  while (seen < upto && !text_backed_.compare_exchange_weak(seen, upto)) {
  }
  return true;
}

ClaimTable::~ClaimTable() {
  munmap(base_, mapped_bytes_);
  close(fd_);  // drops the shared flock
}

ClaimTable::Bucket& ClaimTable::BucketAt(uint64_t i) const {
  return reinterpret_cast<Bucket*>(static_cast<char*>(base_) + kHeaderBytes)[i];
}

void ClaimTable::BucketsOf(const Digest128& d, uint64_t* a, uint64_t* b) const {
  const uint64_t n = static_cast<const Header*>(base_)->buckets;
  *a = Reduce(internal::Mix(d.high ^ kSeedA), n);
  *b = Reduce(internal::Mix(d.low ^ kSeedB), n);
}

bool ClaimTable::ValidText(const Slot& s, std::string* raw) const {
  const auto* h = static_cast<const Header*>(base_);
  const uint64_t off = s.text >> 24;
  const uint64_t len = s.text & kMaxTextLength;
  if (len < 2 || off > h->text_capacity || len > h->text_capacity - off) {
    return false;
  }
  raw->resize(len);
  if (PreadFull(fd_, raw->data(), len, h->text_offset + off) !=
      ReadResult::kDone)
    return false;
  const auto id_len = static_cast<uint8_t>((*raw)[0]);
  if (id_len == 0 || uint64_t{id_len} + 1 >= len) return false;
  return CheckOf(s.key_high, s.key_low, s.time_us, s.text, raw->data(), len) ==
         s.check;
}

bool ClaimTable::SlotValid(const Slot& s) const {
  std::string raw;
  return ValidText(s, &raw);
}

bool ClaimTable::ReadText(const Slot& s, std::string* record_id,
                          std::string* uri) const {
  std::string raw;
  if (!ValidText(s, &raw)) return false;
  SplitText(raw, record_id, uri);
  return true;
}

bool ClaimTable::WriteText(uint64_t off, const char* bytes, size_t n) {
  const auto* h = static_cast<const Header*>(base_);
  return PwriteFull(fd_, bytes, n, h->text_offset + off);
}

uint64_t ClaimTable::file_bytes() const {
  return mapped_bytes_ + text_capacity();
}

void ClaimTable::Repair(Bucket& b) {
  uint16_t used = 0;
  for (int k = 0; k < kSlots; ++k) {
    Slot& s = b.slots[k];
    if (s.state == kUpdating) {
      // Died rewriting the time: the other fields are intact, and the
      // time (one aligned 8-byte store) is old or new, never torn.
      const auto* h = static_cast<const Header*>(base_);
      const uint64_t off = s.text >> 24;
      const uint64_t len = s.text & kMaxTextLength;
      std::string raw(
          off <= h->text_capacity && len <= h->text_capacity - off ? len : 0,
          '\0');
      if (!raw.empty() &&
          PreadFull(fd_, raw.data(), len, h->text_offset + off) ==
              ReadResult::kDone) {
        s.check =
            CheckOf(s.key_high, s.key_low, s.time_us, s.text, raw.data(), len);
      }
      s.state = kPending;
    }
    if ((s.state == kPending || s.state == kStored) && SlotValid(s)) {
      b.tags[k] = TagOf({s.key_high, s.key_low});
      ++used;
      continue;
    }
    if (s.state != kEmpty) dropped_.fetch_add(1, std::memory_order_relaxed);
    b.tags[k] = 0;
    s.state = kEmpty;
  }
  b.used = used;
}

ClaimResult ClaimTable::Claim(const Digest128& digest,
                              const DocumentClaim& proposal) {
  ClaimResult out;
  const size_t text_len =
      1 + proposal.record_id.size() + proposal.target_uri.size();
  if (proposal.record_id.empty() || proposal.record_id.size() > 255 ||
      proposal.record_id.find(' ') != std::string::npos ||
      proposal.target_uri.empty() || text_len > kMaxTextLength) {
    out.error = "claim table: bad record id or URI";
    return out;
  }
  auto* h = static_cast<Header*>(base_);
  uint64_t ia, ib;
  BucketsOf(digest, &ia, &ib);
  Locked lock(this, ia, ib);
  if (!lock.ok()) {
    out.error = "claim table: a bucket's mutex is unusable";
    return out;
  }
  const uint8_t tag = TagOf(digest);
  Bucket* buckets[2] = {&BucketAt(ia), ia == ib ? nullptr : &BucketAt(ib)};
  for (Bucket* b : buckets) {
    if (b == nullptr) continue;
    for (int k = 0; k < kSlots; ++k) {
      Slot& s = b->slots[k];
      if (b->tags[k] != tag || s.key_high != digest.high ||
          s.key_low != digest.low) {
        continue;
      }
      DocumentClaim& c = out.claim;
      std::string raw;
      if (!ValidText(s, &raw)) {
        // Torn by a crash (or its text unreadable): drop it and claim
        // afresh below; at worst the body is stored in full once more.
        b->tags[k] = 0;
        Order();
        s.state = kEmpty;
        --b->used;
        h->entries.fetch_sub(1);
        dropped_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      SplitText(raw, &c.record_id, &c.target_uri);
      c.time_us = s.time_us;
      c.stored = s.state == kStored;
      if (!c.stored && c.target_uri == proposal.target_uri) {
        // The same URI's earlier fetch claimed it and never wrote: this
        // fetch writes it, at its own time.
        s.state = kUpdating;
        Order();
        s.time_us = proposal.time_us;
        s.check = CheckOf(s.key_high, s.key_low, s.time_us, s.text, raw.data(),
                          raw.size());
        Order();
        s.state = kPending;
        c.time_us = proposal.time_us;
        out.outcome = ClaimOutcome::kOwn;
        return out;
      }
      out.outcome = ClaimOutcome::kDuplicate;
      return out;
    }
  }
  out.claim = {};
  if (h->entries.load() >= capacity()) {
    out.outcome = ClaimOutcome::kFull;
    return out;
  }
  // New: the less full bucket with a free slot.
  Bucket* target = buckets[0];
  if (buckets[1] != nullptr && buckets[1]->used < buckets[0]->used) {
    target = buckets[1];
  }
  if (target->used >= kSlots) {
    out.outcome = ClaimOutcome::kFull;
    return out;
  }
  int k = 0;
  while (target->tags[k] != 0) ++k;
  // The text area's bump pointer is shared by every bucket's lockers.
  uint64_t off = h->text_used.load();
  do {
    if (off > h->text_capacity || text_len > h->text_capacity - off) {
      out.outcome = ClaimOutcome::kFull;
      return out;
    }
    if (!TextBacked(off + text_len)) {  // a full disk: store in full
      out.outcome = ClaimOutcome::kFull;
      return out;
    }
  } while (!h->text_used.compare_exchange_weak(off, off + text_len));
  std::string text;
  text.reserve(text_len);
  text.push_back(static_cast<char>(proposal.record_id.size()));
  text.append(proposal.record_id).append(proposal.target_uri);
  if (!WriteText(off, text.data(), text.size())) {
    // The bytes taken stay unused, as a process's that died here.
    out.error = Errno("write");
    return out;
  }
  Slot& s = target->slots[k];
  s.key_high = digest.high;
  s.key_low = digest.low;
  s.time_us = proposal.time_us;
  s.text = off << 24 | text_len;
  s.check =
      CheckOf(s.key_high, s.key_low, s.time_us, s.text, text.data(), text_len);
  Order();
  s.state = kPending;
  Order();
  target->tags[k] = tag;
  ++target->used;
  h->entries.fetch_add(1);
  out.outcome = ClaimOutcome::kClaimed;
  return out;
}

Status ClaimTable::Settle(const Digest128& digest, std::string_view record_id,
                          bool stored) {
  auto* h = static_cast<Header*>(base_);
  uint64_t ia, ib;
  BucketsOf(digest, &ia, &ib);
  Locked lock(this, ia, ib);
  if (!lock.ok()) {
    return Status::Unavailable("claim table: a bucket's mutex is unusable");
  }
  const uint8_t tag = TagOf(digest);
  for (uint64_t i : {ia, ib}) {
    Bucket& b = BucketAt(i);
    for (int k = 0; k < kSlots; ++k) {
      Slot& s = b.slots[k];
      if (b.tags[k] != tag || s.key_high != digest.high ||
          s.key_low != digest.low) {
        continue;
      }
      std::string id, uri;
      if (!ReadText(s, &id, &uri) || id != record_id) return Status::Ok();
      if (stored) {
        s.state = kStored;
      } else {
        b.tags[k] = 0;
        Order();
        s.state = kEmpty;
        --b.used;
        h->entries.fetch_sub(1);
      }
      return Status::Ok();
    }
    if (ia == ib) break;
  }
  return Status::Ok();
}

uint64_t ClaimTable::size() const {
  return static_cast<const Header*>(base_)->entries.load();
}

uint64_t ClaimTable::capacity() const {
  const auto* h = static_cast<const Header*>(base_);
  return std::min<uint64_t>(
      h->max_documents,
      static_cast<uint64_t>(static_cast<double>(h->buckets) * kSlots * kFill));
}

uint64_t ClaimTable::text_used() const {
  const auto* h = static_cast<const Header*>(base_);
  return std::min(h->text_used.load(), h->text_capacity);
}

uint64_t ClaimTable::text_capacity() const {
  return static_cast<const Header*>(base_)->text_capacity;
}

uint64_t ClaimTable::repaired_buckets() const {
  return repaired_.load(std::memory_order_relaxed);
}

uint64_t ClaimTable::dropped_slots() const {
  return dropped_.load(std::memory_order_relaxed);
}

void ClaimTable::TEST_AbandonClaim(const Digest128& digest, int stage) {
  auto* h = static_cast<Header*>(base_);
  uint64_t ia, ib;
  BucketsOf(digest, &ia, &ib);
  Bucket& b = BucketAt(ia);
  pthread_mutex_lock(&BucketAt(std::min(ia, ib)).mu);
  if (ia != ib) pthread_mutex_lock(&BucketAt(std::max(ia, ib)).mu);
  int k = 0;
  while (k < kSlots && b.tags[k] != 0) ++k;
  if (k == kSlots || stage <= 0) return;
  const std::string id = "<urn:test:abandoned>";
  const std::string uri = "http://abandoned.test/";
  const uint64_t len = 1 + id.size() + uri.size();
  const uint64_t off = h->text_used.fetch_add(len);
  const std::string text = static_cast<char>(id.size()) + id + uri;
  const char* bytes = text.data();
  if (!WriteText(off, bytes, len)) return;
  Slot& s = b.slots[k];
  s.key_high = digest.high;
  s.key_low = digest.low;
  s.time_us = 1;
  s.text = off << 24 | len;
  if (stage == 1) {
    s.state = kPending;  // the state without its checksum: torn
    s.check = ~CheckOf(s.key_high, s.key_low, s.time_us, s.text, bytes, len);
    return;
  }
  s.check = CheckOf(s.key_high, s.key_low, s.time_us, s.text, bytes, len);
  if (stage == 2) return;  // everything but the state: still empty
  s.state = kPending;      // stage 3: committed, the tag not set
}

}  // namespace crawld::dedupe

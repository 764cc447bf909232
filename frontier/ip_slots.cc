// frontier/ip_slots.cc: see ip_slots.h.
//
// File layout (little-endian, this machine's ABI: every user is the same
// binary on the same machine):
//   Header (64 bytes) | Bucket[buckets]
//   Bucket = robust process-shared pthread mutex | Slot[kSlotsPerBucket]
// Every slot field is read and written under its bucket's mutex, so plain
// integers suffice; the mutex orders the accesses between processes.
//
// Why a mutex per bucket and not lock-free slots: a slot holds more state
// than one compare-and-swap covers (key, holder, times, turn, permit), and
// reusing a slot for another address while others read it would need a
// sequence lock or hazard scheme. A robust mutex gives the same cost when
// uncontended (one atomic exchange each way, bench/ip_slots_bench.cc) and
// tells the next locker when a process died holding it.
#include "frontier/ip_slots.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace crawld::frontier {

struct IpSlotTable::Header {
  char magic[8];
  uint32_t version;
  uint32_t buckets;
  uint32_t slots_per_bucket;
  uint32_t slot_size;
  uint32_t bucket_size;
  uint32_t reserved;
  uint64_t boot_hash;  // xxh3 of /proc/sys/kernel/random/boot_id
  uint64_t unused[3];
};

struct IpSlotTable::Slot {
  Key key;
  uint32_t used;     // 1: key names an address
  uint32_t yield;    // 1: give the permit back at the holder's release
  int64_t next_us;   // the address's next-allowed time
  int64_t since_us;  // holding since (valid while holder_nonce != 0)
  int64_t probe_us;  // next liveness probe of the holder
  uint64_t holder_start;
  int32_t holder_pid;
  uint32_t holder_nonce;  // 0: not held
  int32_t turn_pid;
  uint32_t turn_nonce;  // 0: no turn reserved
  int64_t turn_until_us;
  int64_t permit_until_us;
  int64_t ask_until_us;     // a process asks for the permit until then
  int64_t ask_retry_us;     // nobody asks before then
  int64_t permit_floor_us;  // the last give-back: older answers are stale
};

struct alignas(64) IpSlotTable::Bucket {
  pthread_mutex_t mu;
  Slot slots[kSlotsPerBucket];
};

namespace {

constexpr char kMagic[8] = {'C', 'R', 'W', 'L', 'I', 'P', 'S', 'T'};
constexpr uint32_t kVersion = 1;
constexpr int64_t kNever = INT64_MIN;
// A holder start time that could not be read: never judged by a probe.
constexpr uint64_t kUnknownStart = UINT64_MAX;

uint64_t BootHash() {
  char buf[64] = {};
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  return n > 0 ? XXH3_64bits(buf, static_cast<size_t>(n)) : 0;
}

enum class Proc { kFound, kGone, kUnknown };

// Fields 3 (state) and 22 (starttime, clock ticks after boot) of
// /proc/<pid>/stat.
Proc ReadStat(pid_t pid, char* state, uint64_t* start_ticks) {
  char path[48];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return errno == ENOENT || errno == ESRCH ? Proc::kGone : Proc::kUnknown;
  }
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  const int read_errno = errno;
  close(fd);
  if (n < 0 && read_errno == ESRCH) return Proc::kGone;  // died meanwhile
  if (n <= 0) return Proc::kUnknown;
  buf[n] = '\0';
  // The command name (field 2) is in parentheses and may hold anything,
  // spaces and ')' included: the fields resume after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr || p[1] != ' ') return Proc::kUnknown;
  p += 2;
  *state = *p;
  // Skip to field 22: past the state, 19 more fields.
  for (int field = 3; field < 22 && p != nullptr; ++field) {
    p = std::strchr(p, ' ');
    if (p != nullptr) ++p;
  }
  if (p == nullptr) return Proc::kUnknown;
  *start_ticks = std::strtoull(p, nullptr, 10);
  return Proc::kFound;
}

uint32_t NewNonce() {
  std::random_device rd;
  uint32_t n = 0;
  while (n == 0) n = rd();
  return n;
}

uint32_t RoundBuckets(uint32_t n) {
  n = std::clamp<uint32_t>(n, 1, 1u << 20);
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
  return a + b;
}

}  // namespace

// The bucket's mutex, taken; a mutex whose owner died inside is made
// consistent and the bucket repaired first.
class IpSlotTable::Locked {
 public:
  Locked(IpSlotTable* table, Bucket& b, int64_t now_us) : b_(b) {
    const int rc = pthread_mutex_lock(&b_.mu);
    if (rc == EOWNERDEAD) {
      // The dead process may have left a slot half-written (a release
      // without its gap, say): every address of the bucket waits the
      // reclaim gap, which errs on the strict side.
      pthread_mutex_consistent(&b_.mu);
      for (Slot& s : b_.slots) {
        if (s.used == 1) {
          s.next_us = std::max(
              s.next_us, SaturatingAdd(now_us, table->options_.reclaim_gap_us));
        }
      }
      ++table->stats_.repaired;
    } else if (rc != 0) {
      // ENOTRECOVERABLE cannot happen (every EOWNERDEAD is made consistent
      // above); anything else is a corrupt table.
      std::abort();
    }
  }
  ~Locked() { pthread_mutex_unlock(&b_.mu); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  Bucket& b_;
};

Result<std::unique_ptr<IpSlotTable>> IpSlotTable::Create(
    const std::string& path, const Options& options) {
  const uint32_t buckets = RoundBuckets(options.buckets);
  const size_t size = sizeof(Header) + size_t{buckets} * sizeof(Bucket);
  // Built under a temporary name and renamed: a process that opens `path`
  // sees either the old table or the whole new one.
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IOError("ip slots: " + tmp + ": " + std::strerror(errno));
  }
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int e = errno;
    close(fd);
    unlink(tmp.c_str());
    return Status::IOError("ip slots: " + tmp + ": " + std::strerror(e));
  }
  // Every bucket is written below (its mutex): the blocks are taken first,
  // so a full disk is this clear error, not a SIGBUS on a sparse page.
  if (const int e = posix_fallocate(fd, 0, static_cast<off_t>(size)); e != 0) {
    close(fd);
    unlink(tmp.c_str());
    return Status::IOError("ip slots: " + tmp + ": cannot take " +
                           std::to_string(size >> 10) +
                           " KiB: " + std::strerror(e));
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    const int e = errno;
    unlink(tmp.c_str());
    return Status::IOError("ip slots: mmap: " + std::string(std::strerror(e)));
  }
  auto* h = static_cast<Header*>(base);
  std::memcpy(h->magic, kMagic, sizeof(kMagic));
  h->version = kVersion;
  h->buckets = buckets;
  h->slots_per_bucket = kSlotsPerBucket;
  h->slot_size = sizeof(Slot);
  h->bucket_size = sizeof(Bucket);
  h->boot_hash = BootHash();
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  auto* b =
      reinterpret_cast<Bucket*>(static_cast<char*>(base) + sizeof(Header));
  for (uint32_t i = 0; i < buckets; ++i) pthread_mutex_init(&b[i].mu, &attr);
  pthread_mutexattr_destroy(&attr);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    munmap(base, size);
    unlink(tmp.c_str());
    return Status::IOError("ip slots: " + path + ": " + std::strerror(e));
  }
  return std::unique_ptr<IpSlotTable>(new IpSlotTable(options, base, size));
}

Result<std::unique_ptr<IpSlotTable>> IpSlotTable::Open(const std::string& path,
                                                       const Options& options) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return Status::IOError("ip slots: " + path + ": " + std::strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Header))) {
    close(fd);
    return Status::Corruption("ip slots: " + path + ": too short");
  }
  const auto size = static_cast<size_t>(st.st_size);
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    return Status::IOError("ip slots: mmap: " +
                           std::string(std::strerror(errno)));
  }
  const auto* h = static_cast<const Header*>(base);
  const bool shape_ok =
      std::memcmp(h->magic, kMagic, sizeof(kMagic)) == 0 &&
      h->version == kVersion && h->slots_per_bucket == kSlotsPerBucket &&
      h->slot_size == sizeof(Slot) && h->bucket_size == sizeof(Bucket) &&
      h->buckets != 0 && (h->buckets & (h->buckets - 1)) == 0 &&
      size == sizeof(Header) + size_t{h->buckets} * sizeof(Bucket);
  if (!shape_ok) {
    munmap(base, size);
    return Status::Corruption("ip slots: " + path +
                              ": not a table of this version");
  }
  if (h->boot_hash != BootHash()) {
    munmap(base, size);
    return Status::FailedPrecondition("ip slots: " + path +
                                      ": made before the last boot");
  }
  return std::unique_ptr<IpSlotTable>(new IpSlotTable(options, base, size));
}

Result<std::unique_ptr<IpSlotTable>> IpSlotTable::OpenOrCreate(
    const std::string& path, const Options& options) {
  // Without the lock two processes could both find no table and both
  // create one: the rename of the second would leave the first mapping a
  // file nobody else sees.
  const std::string lock_path = path + ".lock";
  const int lock = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) {
    return Status::IOError("ip slots: " + lock_path + ": " +
                           std::strerror(errno));
  }
  int rc;
  do {
    rc = flock(lock, LOCK_EX);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int e = errno;
    close(lock);
    return Status::IOError("ip slots: " + lock_path + ": " + std::strerror(e));
  }
  struct stat st;
  const bool exists = stat(path.c_str(), &st) == 0;
  Result<std::unique_ptr<IpSlotTable>> table =
      exists ? Open(path, options)
             : Result<std::unique_ptr<IpSlotTable>>(Create(path, options));
  if (exists && !table.ok() &&
      (table.status().code() == Status::Code::kCorruption ||
       table.status().code() == Status::Code::kFailedPrecondition)) {
    table = Create(path, options);
  }
  close(lock);  // releases the flock
  return table;
}

IpSlotTable::IpSlotTable(const Options& options, void* base, size_t size)
    : options_(options), base_(base), size_(size) {
  options_.reclaim_gap_us = std::max<int64_t>(options_.reclaim_gap_us, 0);
  options_.lease_us = std::max<int64_t>(options_.lease_us, 1);
  options_.probe_after_us = std::max<int64_t>(options_.probe_after_us, 1);
  options_.poll_us = std::max<int64_t>(options_.poll_us, 1);
  options_.turn_grace_us =
      std::max<int64_t>(options_.turn_grace_us, options_.poll_us);
  self_.pid = getpid();
  self_.nonce = NewNonce();
  char state = 0;
  if (ReadStat(self_.pid, &state, &self_.start_ticks) != Proc::kFound) {
    // Without our own start time others cannot tell us from a process that
    // reuses our pid: the lease alone decides for our holdings.
    self_.start_ticks = kUnknownStart;
  }
}

IpSlotTable::~IpSlotTable() { munmap(base_, size_); }

uint32_t IpSlotTable::buckets() const {
  return static_cast<const Header*>(base_)->buckets;
}

IpSlotTable::Key IpSlotTable::KeyOf(std::string_view ip) {
  Key k{};
  char text[INET6_ADDRSTRLEN + 1];
  if (ip.size() < sizeof(text)) {
    std::memcpy(text, ip.data(), ip.size());
    text[ip.size()] = '\0';
    in_addr v4;
    if (inet_pton(AF_INET, text, &v4) == 1) {
      // As the IPv4-mapped IPv6 address: one key space for both families.
      k.bytes[10] = 0xff;
      k.bytes[11] = 0xff;
      std::memcpy(&k.bytes[12], &v4, 4);
      return k;
    }
    if (inet_pton(AF_INET6, text, k.bytes) == 1) return k;
  }
  // Not an address: a 128-bit hash, which no two inputs share in practice.
  const XXH128_hash_t h = XXH3_128bits(ip.data(), ip.size());
  std::memcpy(&k.bytes[0], &h.low64, 8);
  std::memcpy(&k.bytes[8], &h.high64, 8);
  return k;
}

IpSlotTable::Bucket& IpSlotTable::BucketFor(const Key& key) const {
  auto* b =
      reinterpret_cast<Bucket*>(static_cast<char*>(base_) + sizeof(Header));
  return b[XXH3_64bits(key.bytes, sizeof(key.bytes)) & (buckets() - 1)];
}

IpSlotTable::Slot* IpSlotTable::Find(Bucket& b, const Key& key, int64_t now_us,
                                     bool claim) {
  Slot* best = nullptr;
  int best_rank = 3;
  for (Slot& s : b.slots) {
    if (s.used == 1 && std::memcmp(s.key.bytes, key.bytes, 16) == 0) return &s;
    if (!claim) continue;
    // A slot that constrains nobody may change address: not held, past its
    // gap, no turn or question pending. A permit it still has would be
    // lost (and asked for again), so such slots come last.
    int rank = 0;
    if (s.used == 1) {
      const bool idle = s.holder_nonce == 0 && s.next_us <= now_us &&
                        (s.turn_nonce == 0 || s.turn_until_us <= now_us) &&
                        s.ask_until_us <= now_us && s.ask_retry_us <= now_us;
      if (!idle) continue;
      rank = s.permit_until_us > now_us ? 2 : 1;
    }
    if (rank < best_rank) {
      best = &s;
      best_rank = rank;
    }
  }
  if (best == nullptr) return nullptr;
  Slot& s = *best;
  s = Slot{};
  s.key = key;
  s.used = 1;
  s.next_us = kNever;
  s.turn_until_us = kNever;
  s.permit_until_us = kNever;
  s.ask_until_us = kNever;
  s.ask_retry_us = kNever;
  s.permit_floor_us = kNever;
  return &s;
}

bool IpSlotTable::Mine(const Slot& s) const {
  return s.holder_nonce == self_.nonce && s.holder_pid == self_.pid;
}

bool IpSlotTable::HolderAlive(pid_t pid, uint64_t start_ticks) {
  if (start_ticks == kUnknownStart) return true;
  char state = 0;
  uint64_t ticks = 0;
  const Proc found = ReadStat(pid, &state, &ticks);
  // A failure to read other than "no such process" (a /proc mounted with
  // hidepid, say) is left to the lease.
  if (found != Proc::kFound) return found == Proc::kUnknown;
  // A zombie is dead (its parent has not reaped it yet); another start
  // time means the pid was reused.
  return state != 'Z' && state != 'X' && state != 'x' && ticks == start_ticks;
}

void IpSlotTable::Reclaim(Slot& s, int64_t now_us) {
  // Its request ended at an unknown time before now: the gap counts from
  // now.
  s.holder_nonce = 0;
  s.holder_pid = 0;
  if (s.yield == 1) {
    // It was to give the permit back at its release: forget the permit, so
    // that the next process here asks again (and is told to give it back).
    s.yield = 0;
    s.permit_until_us = kNever;
    s.permit_floor_us = now_us;
  }
  s.next_us =
      std::max(s.next_us, SaturatingAdd(now_us, options_.reclaim_gap_us));
}

void IpSlotTable::ReserveTurn(Slot& s, int64_t now_us, int64_t until_us) {
  const bool mine = s.turn_nonce == self_.nonce && s.turn_pid == self_.pid;
  if (mine) {
    s.turn_until_us = std::max(s.turn_until_us, until_us);
  } else if (s.turn_nonce == 0 || s.turn_until_us <= now_us) {
    // None, or the other process's turn lapsed (it did not come within its
    // grace): ours now.
    s.turn_pid = self_.pid;
    s.turn_nonce = self_.nonce;
    s.turn_until_us = until_us;
  }
}

IpSlotTable::SlotAttempt IpSlotTable::Acquire(std::string_view ip,
                                              int64_t now_us,
                                              const PermitRule* rule) {
  const Key key = KeyOf(ip);
  Bucket& b = BucketFor(key);
  SlotAttempt out;
  const int64_t poll = SaturatingAdd(now_us, options_.poll_us);
  Locked lock(this, b, now_us);
  Slot* s = Find(b, key, now_us, /*claim=*/true);
  if (s == nullptr) {
    // As if a hash collision shared a slot: wait for one to free.
    ++stats_.denied;
    ++stats_.full;
    out.verdict = Verdict::kFull;
    out.retry_us = poll;
    return out;
  }
  out.permit_until_us = s->permit_until_us;
  if (s->holder_nonce != 0 && !Mine(*s)) {
    if (now_us - s->since_us >= options_.lease_us) {
      Reclaim(*s, now_us);
      ++stats_.lease_taken;
    } else if (now_us >= s->probe_us) {
      s->probe_us = SaturatingAdd(now_us, options_.probe_after_us);
      if (!HolderAlive(s->holder_pid, s->holder_start)) {
        Reclaim(*s, now_us);
        ++stats_.reclaimed;
      }
    }
  }
  if (s->holder_nonce != 0) {
    // Held (by another process; by us only if the caller broke the
    // REQUIRES, which must not start a second request either).
    ReserveTurn(*s, now_us, SaturatingAdd(now_us, options_.turn_grace_us));
    out.verdict = Verdict::kHeld;
    out.retry_us = poll;
  } else if (s->next_us > now_us) {
    ReserveTurn(*s, now_us, SaturatingAdd(s->next_us, options_.turn_grace_us));
    out.verdict = Verdict::kGap;
    out.retry_us = s->next_us;
  } else if (s->turn_nonce != 0 && s->turn_until_us > now_us &&
             !(s->turn_nonce == self_.nonce && s->turn_pid == self_.pid)) {
    out.verdict = Verdict::kTurn;
    out.retry_us = std::min(s->turn_until_us, poll);
  } else if (rule != nullptr &&
             (s->yield == 1 ||
              s->permit_until_us < SaturatingAdd(now_us, rule->min_left_us))) {
    if (s->ask_until_us > now_us || s->yield == 1) {
      out.verdict = Verdict::kPermitWait;
      out.retry_us = poll;
    } else if (s->ask_retry_us > now_us) {
      out.verdict = Verdict::kPermitWait;
      out.retry_us = s->ask_retry_us;
    } else {
      s->ask_until_us = SaturatingAdd(now_us, rule->ask_timeout_us);
      out.verdict = Verdict::kAsk;
      out.retry_us = poll;
    }
  } else {
    s->holder_pid = self_.pid;
    s->holder_nonce = self_.nonce;
    s->holder_start = self_.start_ticks;
    s->since_us = now_us;
    s->probe_us = SaturatingAdd(now_us, options_.probe_after_us);
    if (s->turn_nonce == self_.nonce && s->turn_pid == self_.pid) {
      s->turn_nonce = 0;
      s->turn_pid = 0;
    }
    ++stats_.acquired;
    out.verdict = Verdict::kAcquired;
    out.retry_us = 0;
    return out;
  }
  ++stats_.denied;
  out.retry_us = std::max(out.retry_us, now_us + 1);
  return out;
}

SharedIpSlots::Attempt IpSlotTable::TryAcquire(std::string_view ip,
                                               int64_t now_us) {
  const SlotAttempt a = Acquire(ip, now_us, nullptr);
  return {a.verdict == Verdict::kAcquired, a.retry_us};
}

IpSlotTable::SlotRelease IpSlotTable::ReleaseSlot(std::string_view ip,
                                                  int64_t now_us,
                                                  int64_t next_us,
                                                  const PermitRule& rule) {
  const Key key = KeyOf(ip);
  Bucket& b = BucketFor(key);
  SlotRelease out;
  Locked lock(this, b, now_us);
  Slot* s = Find(b, key, now_us, /*claim=*/false);
  if (s == nullptr || s->holder_nonce == 0 || !Mine(*s)) return out;
  out.released = true;
  s->holder_nonce = 0;
  s->holder_pid = 0;
  s->next_us = std::max(s->next_us, next_us);
  if (s->turn_nonce != 0 && s->turn_until_us > now_us) {
    // The process waiting for its turn learns of the release at its next
    // poll: its grace counts from the end of the gap.
    s->turn_until_us = std::max(
        s->turn_until_us, SaturatingAdd(s->next_us, options_.turn_grace_us));
  }
  if (s->yield == 1) {
    out.give_back = true;
    GiveBack(*s, now_us, rule);
  }
  out.permit_until_us = s->permit_until_us;
  out.next_us = s->next_us;
  return out;
}

void IpSlotTable::GiveBack(Slot& s, int64_t now_us, const PermitRule& rule) {
  s.yield = 0;
  s.permit_until_us = kNever;
  s.permit_floor_us = now_us;
  s.ask_until_us = SaturatingAdd(now_us, rule.ask_timeout_us);
}

void IpSlotTable::Release(std::string_view ip, int64_t now_us,
                          int64_t next_us) {
  (void)ReleaseSlot(ip, now_us, next_us, PermitRule{});
}

bool IpSlotTable::GrantPermit(std::string_view ip, int64_t now_us,
                              int64_t sent_us, int64_t until_us, bool contended,
                              const PermitRule& rule, int64_t* next_us) {
  const Key key = KeyOf(ip);
  Bucket& b = BucketFor(key);
  Locked lock(this, b, now_us);
  Slot* s = Find(b, key, now_us, /*claim=*/true);
  if (s == nullptr) {
    // The bucket is full, so nobody here holds this address (a held
    // address has a slot): a contended permit goes back at once, another
    // is not recorded (and asked for again).
    *next_us = now_us;
    return contended;
  }
  if (sent_us < s->permit_floor_us) return false;  // overtaken by a give-back
  s->ask_until_us = kNever;
  if (!contended) {
    s->permit_until_us = std::max(s->permit_until_us, until_us);
    return false;
  }
  if (s->holder_nonce != 0) {
    // The request in flight is covered; nothing new starts, and its
    // release gives the permit back.
    s->permit_until_us = std::max(s->permit_until_us, until_us);
    s->yield = 1;
    return false;
  }
  GiveBack(*s, now_us, rule);
  *next_us = std::max(s->next_us, now_us);
  return true;
}

void IpSlotTable::DenyPermit(std::string_view ip, int64_t now_us,
                             int64_t sent_us, int64_t retry_us) {
  const Key key = KeyOf(ip);
  Bucket& b = BucketFor(key);
  Locked lock(this, b, now_us);
  Slot* s = Find(b, key, now_us, /*claim=*/true);
  if (s == nullptr) return;
  // Stale: the give-back forgot the permit already, and its wait is the
  // give-back's own, ended by EndQuestion.
  if (sent_us < s->permit_floor_us) return;
  s->ask_until_us = kNever;
  s->permit_until_us = kNever;
  s->yield = 0;
  s->ask_retry_us = std::max(s->ask_retry_us, retry_us);
}

void IpSlotTable::EndQuestion(std::string_view ip, int64_t now_us,
                              int64_t retry_us) {
  const Key key = KeyOf(ip);
  Bucket& b = BucketFor(key);
  Locked lock(this, b, now_us);
  Slot* s = Find(b, key, now_us, /*claim=*/false);
  if (s == nullptr) return;  // taken over by another address: nothing waits
  s->ask_until_us = kNever;
  s->ask_retry_us = std::max(s->ask_retry_us, retry_us);
}

void IpSlotTable::LockBucketForTest(std::string_view ip) {
  pthread_mutex_lock(&BucketFor(KeyOf(ip)).mu);
}

}  // namespace crawld::frontier

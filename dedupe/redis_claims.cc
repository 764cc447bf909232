// RedisClaims: the document claims of a crawl on several machines, in the
// crawl's Redis. See dedupe.h (NewRedisClaims) and docs/CLUSTER.md
// ("Document dedupe across nodes").
//
// One key per digest, "<prefix>doc:<32 hex>", whose value is
// "<P|S> <time_us> <record_id> <uri>" (P: pending, S: stored), and a
// counter "<prefix>doc-count" of the keys, which bounds them. A claim and a
// settle are each one Lua script, so a claim's read, test and write are
// one atomic step for Redis (no home-made locking between nodes).
//
// The calls block: they run on the worker's thread pool, never on its
// loop. hiredis' blocking context is not thread-safe, so each call borrows
// a connection from a small pool (one per thread at most).
#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dedupe/dedupe.h"

namespace crawld::dedupe {
namespace {

// KEYS: claim, counter. ARGV: new value, max, uri, time_us.
// Returns the existing value (after a same-URI pending claim took the new
// time), 1 when claimed, 0 when the bound is reached.
constexpr char kClaimScript[] = R"lua(
local v = redis.call('GET', KEYS[1])
if v then
  local state, t, id, uri = string.match(v, '^(%u) (%-?%d+) (%S+) (.*)$')
  if state == 'P' and uri == ARGV[3] then
    v = 'P ' .. ARGV[4] .. ' ' .. id .. ' ' .. uri
    redis.call('SET', KEYS[1], v)
  end
  return v
end
if tonumber(redis.call('GET', KEYS[2]) or '0') >= tonumber(ARGV[2]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('INCR', KEYS[2])
return 1
)lua";

// KEYS: claim, counter. ARGV: record id, "1" stored / "0" release.
constexpr char kSettleScript[] = R"lua(
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local state, id = string.match(v, '^(%u) %-?%d+ (%S+) ')
if id ~= ARGV[1] then return 0 end
if ARGV[2] == '1' then
  if state ~= 'S' then redis.call('SETRANGE', KEYS[1], 0, 'S') end
else
  redis.call('DEL', KEYS[1])
  redis.call('DECR', KEYS[2])
end
return 1
)lua";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Hex(const Digest128& d) {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx",
                static_cast<unsigned long long>(d.high),
                static_cast<unsigned long long>(d.low));
  return buf;
}

struct ReplyFree {
  void operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// "<P|S> <time_us> <record_id> <uri>" -> claim; false when malformed.
bool ParseValue(std::string_view v, DocumentClaim* c) {
  if (v.size() < 2 || (v[0] != 'P' && v[0] != 'S') || v[1] != ' ') {
    return false;
  }
  c->stored = v[0] == 'S';
  v.remove_prefix(2);
  const size_t sp1 = v.find(' ');
  if (sp1 == std::string_view::npos) return false;
  const std::string t(v.substr(0, sp1));
  char* end = nullptr;
  c->time_us = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0') return false;
  v.remove_prefix(sp1 + 1);
  const size_t sp2 = v.find(' ');
  if (sp2 == std::string_view::npos || sp2 == 0) return false;
  c->record_id = std::string(v.substr(0, sp2));
  c->target_uri = std::string(v.substr(sp2 + 1));
  return !c->target_uri.empty();
}

class RedisClaims final : public DocumentClaims {
 public:
  explicit RedisClaims(const Options& o) : o_(o) {
    o_.max_documents =
        std::clamp<uint64_t>(o_.max_documents, 1024, uint64_t{1} << 32);
    o_.redis_timeout_ms = std::clamp(o_.redis_timeout_ms, 1, 60'000);
    o_.redis_retry_ms = std::clamp(o_.redis_retry_ms, 0, 600'000);
    count_key_ = o_.redis_prefix + "doc-count";
  }
  ~RedisClaims() override {
    for (redisContext* c : idle_) redisFree(c);
  }

  ClaimResult Claim(const Digest128& digest, const DocumentClaim& p) override {
    ClaimResult out;
    if (p.record_id.empty() || p.record_id.find(' ') != std::string::npos ||
        p.target_uri.empty()) {
      out.error = "redis claims: bad record id or URI";
      return out;
    }
    const std::string time = std::to_string(p.time_us);
    const std::string value =
        "P " + time + " " + p.record_id + " " + p.target_uri;
    Reply r =
        Eval(kClaimScript, Key(digest),
             {value, std::to_string(o_.max_documents), p.target_uri, time},
             &out.error);
    if (r == nullptr) return out;
    if (r->type == REDIS_REPLY_INTEGER) {
      out.outcome =
          r->integer == 1 ? ClaimOutcome::kClaimed : ClaimOutcome::kFull;
      return out;
    }
    if (r->type != REDIS_REPLY_STRING ||
        !ParseValue(std::string_view(r->str, r->len), &out.claim)) {
      out.error = "redis claims: malformed claim of " + Hex(digest);
      return out;
    }
    out.outcome = !out.claim.stored && out.claim.target_uri == p.target_uri
                      ? ClaimOutcome::kOwn
                      : ClaimOutcome::kDuplicate;
    return out;
  }

  Status Settle(const Digest128& digest, std::string_view record_id,
                bool stored) override {
    std::string error;
    Reply r = Eval(kSettleScript, Key(digest),
                   {std::string(record_id), stored ? "1" : "0"}, &error);
    if (r == nullptr) return Status::Unavailable(error);
    return Status::Ok();
  }

  uint64_t size() const override {
    std::string error;
    Reply r = Command({"GET", count_key_}, &error);
    if (r == nullptr || r->type != REDIS_REPLY_STRING) return 0;
    return std::strtoull(std::string(r->str, r->len).c_str(), nullptr, 10);
  }

  uint64_t capacity() const override { return o_.max_documents; }

 private:
  std::string Key(const Digest128& d) const {
    return o_.redis_prefix + "doc:" + Hex(d);
  }

  Reply Eval(const char* script, const std::string& key,
             const std::vector<std::string>& args, std::string* error) const {
    std::vector<std::string> argv = {"EVAL", script, "2", key, count_key_};
    argv.insert(argv.end(), args.begin(), args.end());
    return Command(argv, error);
  }

  // Runs one command on a pooled connection; nullptr (and *error) when
  // Redis failed, refused the command, or is resting after a failure.
  Reply Command(const std::vector<std::string>& args,
                std::string* error) const {
    if (NowMs() < down_until_ms_.load(std::memory_order_relaxed)) {
      *error = "redis claims: unavailable (resting after a failure)";
      return nullptr;
    }
    redisContext* c = Borrow(error);
    if (c == nullptr) {
      Rest();
      return nullptr;
    }
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    Reply r(static_cast<redisReply*>(redisCommandArgv(
        c, static_cast<int>(args.size()), ptrs.data(), lens.data())));
    if (r == nullptr) {
      // A timeout or a broken connection: this context is done for.
      *error = std::string("redis claims: ") +
               (c->errstr[0] != '\0' ? c->errstr : "no reply");
      redisFree(c);
      Rest();
      return nullptr;
    }
    Return(c);
    if (r->type == REDIS_REPLY_ERROR) {
      *error = "redis claims: " + std::string(r->str, r->len);
      return nullptr;
    }
    return r;
  }

  redisContext* Borrow(std::string* error) const {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!idle_.empty()) {
        redisContext* c = idle_.back();
        idle_.pop_back();
        return c;
      }
    }
    timeval tv{o_.redis_timeout_ms / 1000, (o_.redis_timeout_ms % 1000) * 1000};
    redisContext* c =
        redisConnectWithTimeout(o_.redis_host.c_str(), o_.redis_port, tv);
    if (c == nullptr || c->err != 0) {
      *error = "redis claims: connect " + o_.redis_host + ":" +
               std::to_string(o_.redis_port) + ": " +
               (c != nullptr ? c->errstr : "out of memory");
      if (c != nullptr) redisFree(c);
      return nullptr;
    }
    redisSetTimeout(c, tv);
    return c;
  }

  void Return(redisContext* c) const {
    std::lock_guard<std::mutex> l(mu_);
    idle_.push_back(c);
  }

  // Drops every pooled connection (they share the failed server) and rests.
  void Rest() const {
    down_until_ms_.store(NowMs() + o_.redis_retry_ms,
                         std::memory_order_relaxed);
    std::vector<redisContext*> drop;
    {
      std::lock_guard<std::mutex> l(mu_);
      drop.swap(idle_);
    }
    for (redisContext* c : drop) redisFree(c);
  }

  Options o_;
  std::string count_key_;
  mutable std::mutex mu_;
  mutable std::vector<redisContext*> idle_;  // guarded by mu_
  mutable std::atomic<int64_t> down_until_ms_{0};
};

}  // namespace

std::unique_ptr<DocumentClaims> NewRedisClaims(const Options& options) {
  return std::make_unique<RedisClaims>(options);
}

}  // namespace crawld::dedupe

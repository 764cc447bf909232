// A seeded mutation driver for fuzz targets built without libFuzzer, so that
// plain ctest exercises every fuzz target on every run (after ada's
// tests/basic_fuzzer.cpp). It feeds each file of the corpus directory given
// as argv[1], then random mutations of them, for a bounded number of
// iterations and seconds. Each input is copied into an exact-size heap buffer
// so that ASan sees any read past its end.
//
// Knobs (environment): CRAWLD_FUZZ_ITERATIONS (default 20000),
// CRAWLD_FUZZ_SECONDS (default 20), CRAWLD_FUZZ_SEED (default 1).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void RunOne(const std::string& input) {
  std::unique_ptr<uint8_t[]> buf(new uint8_t[input.size()]);
  if (!input.empty()) std::memcpy(buf.get(), input.data(), input.size());
  LLVMFuzzerTestOneInput(buf.get(), input.size());
}

long EnvOr(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtol(v, nullptr, 10) : fallback;
}

std::string Mutate(const std::string& in, const std::vector<std::string>& pool,
                   std::mt19937_64& rng) {
  std::string s = in;
  int edits = 1 + static_cast<int>(rng() % 8);
  static const char kInteresting[] =
      "\0\r\n\t /\\:?#%@[]<>\"'&=*$.-_~\xff\xc3\x80";
  for (int i = 0; i < edits; ++i) {
    size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 6) {
      case 0:  // insert a random byte
        s.insert(s.begin() + static_cast<long>(pos), static_cast<char>(rng()));
        break;
      case 1:  // insert an interesting byte
        s.insert(s.begin() + static_cast<long>(pos),
                 kInteresting[rng() % (sizeof(kInteresting) - 1)]);
        break;
      case 2:  // delete a run
        if (!s.empty() && pos < s.size()) s.erase(pos, 1 + rng() % 16);
        break;
      case 3:  // flip a byte
        if (pos < s.size())
          s[pos] = static_cast<char>(s[pos] ^ (1 << (rng() % 8)));
        break;
      case 4: {  // splice a piece of another input
        const std::string& other = pool[rng() % pool.size()];
        if (!other.empty()) {
          size_t from = rng() % other.size();
          s.insert(pos, other.substr(from, 1 + rng() % 64));
        }
        break;
      }
      case 5:  // duplicate a run (grows repetitive structures)
        if (pos < s.size()) s.insert(pos, s.substr(pos, 1 + rng() % 32));
        break;
    }
  }
  if (s.size() > (1u << 20)) s.resize(1u << 20);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pool;
  if (argc > 1 && std::filesystem::is_directory(argv[1])) {
    for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
      std::ifstream f(entry.path(), std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      pool.push_back(ss.str());
    }
  }
  if (pool.empty()) pool.push_back("");
  for (const auto& input : pool) RunOne(input);

  const long iterations = EnvOr("CRAWLD_FUZZ_ITERATIONS", 20000);
  const long seconds = EnvOr("CRAWLD_FUZZ_SECONDS", 20);
  std::mt19937_64 rng(static_cast<uint64_t>(EnvOr("CRAWLD_FUZZ_SEED", 1)));
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  long done = 0;
  for (; done < iterations; ++done) {
    if ((done & 255) == 0 && std::chrono::steady_clock::now() > deadline) break;
    std::string input = pool[rng() % pool.size()];
    input = Mutate(input, pool, rng);
    RunOne(input);
    if (rng() % 16 == 0 && pool.size() < 4096) pool.push_back(std::move(input));
  }
  std::printf("fuzz driver: %zu seeds, %ld mutations, no crash\n", pool.size(),
              done);
  return 0;
}

#include "cluster/cluster.h"

#include <xxhash.h>

#include <algorithm>
#include <string>
#include <vector>

namespace crawld::cluster {

namespace {

std::vector<int> FirstWorkers(int workers) {
  std::vector<int> ids;
  for (int w = 0; w < std::max(workers, 1); ++w) ids.push_back(w);
  return ids;
}

}  // namespace

Ring::Ring(int workers, const Options& options) : workers_(0) {
  Build(FirstWorkers(workers), options);
}

Ring::Ring(const std::vector<int>& workers, const Options& options)
    : workers_(0) {
  Build(workers.empty() ? FirstWorkers(1) : workers, options);
}

void Ring::Build(const std::vector<int>& workers, const Options& options) {
  workers_ = static_cast<int>(workers.size());
  const int vnodes = std::clamp(options.virtual_nodes, 1, 65536);
  points_.reserve(workers.size() * static_cast<size_t>(vnodes));
  std::string key;
  for (int w : workers) {
    for (int v = 0; v < vnodes; ++v) {
      key = std::to_string(w);
      key += '#';
      key += std::to_string(v);
      points_.push_back(Point{XXH3_64bits(key.data(), key.size()), w});
    }
  }
  // The worker breaks hash ties, so even a collision is resolved the same
  // way in every process.
  std::sort(points_.begin(), points_.end(), [](const Point& a, const Point& b) {
    return a.hash != b.hash ? a.hash < b.hash : a.worker < b.worker;
  });
}

int Ring::Owner(std::string_view host) const {
  const uint64_t h = XXH3_64bits(host.data(), host.size());
  auto it = std::lower_bound(
      points_.begin(), points_.end(), h,
      [](const Point& p, uint64_t value) { return p.hash < value; });
  if (it == points_.end()) it = points_.begin();  // wrap around the circle
  return it->worker;
}

}  // namespace crawld::cluster

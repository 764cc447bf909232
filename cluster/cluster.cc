#include "cluster/cluster.h"

#include <xxhash.h>

#include <algorithm>
#include <string>

namespace crawld::cluster {

Ring::Ring(int workers, const Options& options)
    : workers_(std::max(workers, 1)) {
  const int vnodes = std::clamp(options.virtual_nodes, 1, 65536);
  points_.reserve(static_cast<size_t>(workers_) * static_cast<size_t>(vnodes));
  std::string key;
  for (int w = 0; w < workers_; ++w) {
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

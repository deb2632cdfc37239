// SPDX-License-Identifier: MIT
#include "train/ranks.h"

#include "core/files.h"

namespace nt {

CheckpointData shared_checkpoint(dist::Comm& c, const RunFolder& run) {
  if (c.size() == 1) return run.newest_valid_checkpoint();
  std::string path, bytes;
  if (c.rank() == 0) {
    path = run.newest_valid_checkpoint().path;
    bytes = read_file(path);
  }
  dist::broadcast_string(c, path);
  dist::broadcast_string(c, bytes);
  // Every rank verifies its copy (the checksum covers every byte).
  return parse_checkpoint(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
}

void share_decision(dist::Comm& c, StepDecision& d) {
  if (c.size() > 1) c.broadcast(&d, sizeof d, 0);
}

}  // namespace nt

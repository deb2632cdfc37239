// SPDX-License-Identifier: MIT
#include "eval/bpb.h"

#include <chrono>
#include <cmath>
#include <vector>

namespace nt {

BpbResult evaluate_bpb(Gpt& model, const ValLoader& val, const Tokenizer& tok, int B, int T) {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t N = size_t(B) * T;
  std::vector<int32_t> in(N), tg(N);
  std::vector<float> losses(N);
  double nats = 0;
  BpbResult r;
  for (size_t i = 0; i < val.num_batches(); ++i) {
    val.batch(i, in.data(), tg.data());
    model.forward_loss(in.data(), tg.data(), B, T, losses.data());
    for (size_t j = 0; j < N; ++j) {
      if (tg[j] < 0) continue;
      const uint32_t nb = tok.token_bytes(uint32_t(tg[j]));
      if (nb == 0) continue;
      nats += losses[j];
      r.bytes += nb;
      r.targets += 1;
    }
  }
  r.loss = r.targets ? nats / double(r.targets) : 0;
  r.bpb = r.bytes ? nats / (std::log(2.0) * double(r.bytes)) : 0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace nt

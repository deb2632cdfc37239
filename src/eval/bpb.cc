// SPDX-License-Identifier: MIT
#include "eval/bpb.h"

#include <chrono>
#include <cmath>
#include <vector>

namespace nt {

void bpb_batch_sums(Gpt& model, const ValLoader& val, const Tokenizer& tok, int B, int T, size_t first, size_t end,
                    double* sums) {
  const size_t N = size_t(B) * T;
  std::vector<int32_t> in(N), tg(N);
  std::vector<float> losses(N);
  for (size_t i = first; i < end; ++i) {
    val.batch(i, in.data(), tg.data());
    model.forward_loss(in.data(), tg.data(), B, T, losses.data());
    double nats = 0, bytes = 0, targets = 0;
    for (size_t j = 0; j < N; ++j) {
      if (tg[j] < 0) continue;
      const uint32_t nb = tok.token_bytes(uint32_t(tg[j]));
      if (nb == 0) continue;
      nats += losses[j];
      bytes += nb;
      targets += 1;
    }
    sums[3 * i] = nats, sums[3 * i + 1] = bytes, sums[3 * i + 2] = targets;
  }
}

BpbResult bpb_from_batch_sums(const double* sums, size_t batches) {
  double nats = 0, bytes = 0, targets = 0;
  for (size_t i = 0; i < batches; ++i) nats += sums[3 * i], bytes += sums[3 * i + 1], targets += sums[3 * i + 2];
  BpbResult r;
  r.targets = uint64_t(targets), r.bytes = uint64_t(bytes);
  r.loss = r.targets ? nats / targets : 0;
  r.bpb = r.bytes ? nats / (std::log(2.0) * bytes) : 0;
  return r;
}

BpbResult evaluate_bpb(Gpt& model, const ValLoader& val, const Tokenizer& tok, int B, int T) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> sums(3 * val.num_batches());
  bpb_batch_sums(model, val, tok, B, T, 0, val.num_batches(), sums.data());
  BpbResult r = bpb_from_batch_sums(sums.data(), val.num_batches());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace nt

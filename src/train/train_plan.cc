// SPDX-License-Identifier: MIT
#include "train/train_plan.h"

#include <algorithm>

#include "core/check.h"
#include "core/duration.h"
#include "core/system.h"
#include "dist/comm.h"
#include "train/preset_optim.h"
#include "train/ranks.h"

namespace nt {

std::string human_bytes(double b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) b /= 1024, ++i;
  return strf("%.1f %s", b, u[i]);
}

TrainPlan plan_settings(const TrainConfig& cfg) {
  cfg.validate();
  TrainPlan p;
  p.cfg = cfg;
  if (cfg.steps == 0) p.budget_s = *parse_duration(cfg.time_budget);
  p.eval_every = parse_interval("--eval-every", cfg.eval_every);
  p.save_every = parse_interval("--save-every", cfg.save_every);
  p.core_every = parse_interval("--core-every", cfg.core_every);
  p.pack = cfg.packing == "stream" ? PackMode::Stream : PackMode::BestFit;
  p.backend = &backend_for_device(cfg.device);
  p.kernels = &p.backend->kernels();
  p.prec = !cfg.dtype.empty() ? parse_precision(cfg.dtype.c_str()) : p.backend->default_precision();
  p.machine = p.backend->describe();
  const dist::Comm& comm = dist::world();
  p.ranks = comm.size();
  p.threads = setup_threads(cfg.threads, comm.local_rank(), comm.local_size());
  return p;
}

void plan_model(TrainPlan& p, const Tokenizer& tok) {
  const TrainConfig& cfg = p.cfg;
  p.model = resolve_model_config(cfg.shape, int(tok.vocab_size()));
  const ModelConfig& mc = p.model;
  if (uint32_t(mc.vocab_size) < tok.vocab_size())
    fail("--vocab-size %d: smaller than the data's tokenizer vocabulary (%u)", mc.vocab_size, tok.vocab_size());
  p.B = cfg.batch_size > 0 ? cfg.batch_size : (cfg.shape.preset == "frontier" ? 4 : 16);
  p.T = mc.seq_len;
  const int64_t micro_tokens = int64_t(p.B) * p.T;
  p.step_tokens = cfg.total_batch_tokens > 0 ? cfg.total_batch_tokens : micro_tokens;
  if (p.step_tokens % micro_tokens != 0)
    fail("--total-batch-tokens %lld: must be a multiple of --batch-size x seq_len = %lld", (long long)p.step_tokens,
         (long long)micro_tokens);
  p.accum = p.step_tokens / micro_tokens;
  if (p.accum % p.ranks != 0)
    fail("--total-batch-tokens %lld: its %lld micro-batches of --batch-size x seq_len do not divide among %d ranks",
         (long long)p.step_tokens, (long long)p.accum, p.ranks);
  p.optim = cfg.optim;
  apply_preset_optim(cfg.shape.preset, mc.d_model, p.optim);
  p.optim.resolve(mc.d_model, mc.tie_embeddings);
  p.optim.bf16_newton_schulz = p.prec == Precision::kBf16;
  p.eval_B = cfg.eval_batch_size > 0 ? cfg.eval_batch_size : p.B;
  p.n_params = count_params(mc);
  p.n_matmul = count_matmul_params(mc);
  p.flops_per_token = flops_per_token(mc, p.T);
  const std::vector<ParamSpec> specs = param_specs(mc);  // sizes only; nothing allocated yet
  p.memory.params = arena_numel(specs) * sizeof(float);
  p.memory.state_whole = Optimizer::state_floats(specs, p.threads, p.optim.bf16_newton_schulz) * sizeof(float);
  p.memory.state = p.memory.state_whole;
  if (p.ranks > 1) {
    const std::vector<int> owners = tensor_owners(specs, p.ranks);
    p.memory.state = 0;
    for (int r = 0; r < p.ranks; ++r)
      p.memory.state = std::max(p.memory.state, Optimizer::state_floats(specs, p.threads, p.optim.bf16_newton_schulz,
                                                                        owned_by(owners, r)) * sizeof(float));
    p.memory.checkpoint_copy = p.memory.params;
  }
  p.memory.activations = Gpt::activation_bytes(mc, std::max(p.B, p.eval_B), p.T, p.prec);
  p.memory.available = available_memory_bytes();
}

void check_inference_memory(const ModelConfig& model, int batch, int seq, const char* what) {
  // Parameters and their copy in the model's arena (the file's are released after loading), the
  // activations of one batch, and the sampler's KV cache.
  const double need = 2.0 * double(count_params(model)) * sizeof(float) +
                      double(Gpt::activation_bytes(model, batch, seq)) +
                      2.0 * model.depth * double(model.seq_len) * model.n_kv_head * model.head_dim * sizeof(float);
  const size_t available = available_memory_bytes();
  if (available > 0 && need > 0.9 * double(available))
    fail("%s: this model needs about %s but only %s of memory is available", what, human_bytes(need).c_str(),
         human_bytes(double(available)).c_str());
}

void check_memory(const TrainPlan& p) {
  const MemoryEstimate& m = p.memory;
  if (m.available > 0 && double(m.need()) > 0.9 * double(m.available))
    fail("this run needs about %s but only %s of memory is available; lower --batch-size or the model size",
         human_bytes(double(m.need())).c_str(), human_bytes(double(m.available)).c_str());
}

nlohmann::json config_json(const TrainPlan& p, const std::string& run_id, const std::string& tok_spec, const Tokenizer& tok,
                           double peak_gflops, uint64_t data_train_tokens) {
  const TrainConfig& cfg = p.cfg;
  return {{"program", "nanotrain"}, {"version", NT_VERSION}, {"run_id", run_id}, {"model", p.model.to_json()},
          {"optimizer", p.optim.to_json()}, {"schedule", fields_to_json(cfg.schedule)},
          {"preset", cfg.shape.preset}, {"data_dir", cfg.data_dir}, {"data_train_tokens", data_train_tokens},
          {"tokenizer", tok_spec},
          {"tokenizer_id", to_hex(tok.identity())}, {"device", cfg.device}, {"kernels", p.kernels->name},
          {"dtype", precision_name(p.prec)}, {"time_budget_seconds", p.budget_s}, {"steps", cfg.steps},
          {"batch_size", p.B}, {"seq_len", p.T}, {"total_batch_tokens", p.step_tokens},
          {"grad_accum_steps", p.accum}, {"seed", cfg.seed}, {"packing", cfg.packing},
          {"eval_every", cfg.eval_every}, {"eval_tokens", cfg.eval_tokens}, {"eval_batch_size", p.eval_B},
          {"save_every", cfg.save_every}, {"keep_checkpoints", cfg.keep_checkpoints}, {"on_nan", cfg.on_nan},
          {"threads", p.threads}, {"ranks", p.ranks}, {"peak_gflops", peak_gflops}, {"flags", cfg.to_json()}};
}

std::string plan_device_line(const TrainPlan& p) {
  return strf("nanotrain %s | device %s (%s) | %s | cpu features: %s | threads %d%s", NT_VERSION, p.cfg.device.c_str(),
              p.kernels->name, precision_name(p.prec), p.machine.c_str(), p.threads,
              p.ranks > 1 ? strf(" x %d ranks", p.ranks).c_str() : "");
}

std::string plan_model_line(const TrainPlan& p) {
  const ModelConfig& mc = p.model;
  return strf("model: preset %s, depth %d, d_model %d, heads %d (kv %d) x %d, seq %d, vocab %d | params %lld "
              "(%lld matmul, %lld embedding)",
              p.cfg.shape.preset.c_str(), mc.depth, mc.d_model, mc.n_head, mc.n_kv_head, mc.head_dim, mc.seq_len,
              mc.vocab_size, (long long)p.n_params, (long long)p.n_matmul, (long long)(p.n_params - p.n_matmul));
}

std::string plan_memory_line(const TrainPlan& p) {
  const MemoryEstimate& m = p.memory;
  const std::string optimizer =
      p.ranks > 1 ? strf("optimizer %s (its share of %s) + checkpoint copy %s", human_bytes(double(m.state)).c_str(),
                         human_bytes(double(m.state_whole)).c_str(), human_bytes(double(m.checkpoint_copy)).c_str())
                  : "optimizer " + human_bytes(double(m.state));
  return strf("memory%s: params %s + grads %s + %s + activations %s = %s (available %s)",
              p.ranks > 1 ? " a rank" : "", human_bytes(double(m.params)).c_str(),
              human_bytes(double(m.params)).c_str(), optimizer.c_str(), human_bytes(double(m.activations)).c_str(),
              human_bytes(double(m.need())).c_str(), human_bytes(double(m.available)).c_str());
}

std::string plan_batch_line(const TrainPlan& p) {
  return strf("batch %d x %d tokens, %lld micro-batch(es) per step (%lld tokens) | %s", p.B, p.T, (long long)p.accum,
              (long long)p.step_tokens,
              p.cfg.steps > 0 ? strf("%lld steps", (long long)p.cfg.steps).c_str()
                              : ("budget " + format_duration(p.budget_s)).c_str());
}

}  // namespace nt

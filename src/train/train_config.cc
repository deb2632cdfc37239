// SPDX-License-Identifier: MIT
#include "train/train_config.h"

#include "core/check.h"

namespace nt {

nlohmann::json TrainConfig::to_json() const {
  return {{"data_dir", data_dir}, {"run_dir", run_dir}, {"device", device}, {"dtype", dtype}, {"profile", profile},
          {"shape", {{"preset", shape.preset}, {"depth", shape.depth}, {"d_model", shape.d_model},
                     {"n_head", shape.n_head}, {"n_kv_head", shape.n_kv_head}, {"head_dim", shape.head_dim},
                     {"seq_len", shape.seq_len}, {"vocab_size", shape.vocab_size}, {"rope_base", shape.rope_base}}},
          {"optim", optim.to_json()},
          {"schedule", {{"warmup_frac", schedule.warmup_frac}, {"warmdown_frac", schedule.warmdown_frac},
                        {"final_lr_frac", schedule.final_lr_frac}}},
          {"time_budget", time_budget}, {"steps", steps}, {"batch_size", batch_size},
          {"total_batch_tokens", total_batch_tokens}, {"seed", seed}, {"packing", packing},
          {"eval_every", eval_every}, {"eval_tokens", eval_tokens}, {"eval_batch_size", eval_batch_size},
          {"threads", threads}, {"peak_gflops", peak_gflops}, {"sample_tokens", sample_tokens},
          {"sample_prompt", sample_prompt}, {"save_every", save_every}, {"keep_checkpoints", keep_checkpoints},
          {"on_nan", on_nan}};
}

TrainConfig TrainConfig::from_json(const nlohmann::json& j) {
  TrainConfig c;
  try {
    c.data_dir = j.at("data_dir");
    c.run_dir = j.at("run_dir");
    c.device = j.at("device");
    c.dtype = j.value("dtype", "");
    c.profile = j.value("profile", false);
    const auto& s = j.at("shape");
    c.shape.preset = s.at("preset");
    c.shape.depth = s.at("depth");
    c.shape.d_model = s.at("d_model");
    c.shape.n_head = s.at("n_head");
    c.shape.n_kv_head = s.at("n_kv_head");
    c.shape.head_dim = s.at("head_dim");
    c.shape.seq_len = s.at("seq_len");
    c.shape.vocab_size = s.at("vocab_size");
    c.shape.rope_base = s.at("rope_base");
    const auto& o = j.at("optim");
    c.optim.lr_matrix = o.at("lr_matrix");
    c.optim.lr_embed = o.at("lr_embed");
    c.optim.lr_head = o.at("lr_head");
    c.optim.beta1 = o.at("beta1");
    c.optim.beta2 = o.at("beta2");
    c.optim.eps = o.at("eps");
    c.optim.weight_decay = o.at("weight_decay");
    c.optim.momentum = o.at("momentum");
    c.optim.ns_steps = o.at("ns_steps");
    const auto& sc = j.at("schedule");
    c.schedule.warmup_frac = sc.at("warmup_frac");
    c.schedule.warmdown_frac = sc.at("warmdown_frac");
    c.schedule.final_lr_frac = sc.at("final_lr_frac");
    c.time_budget = j.at("time_budget");
    c.steps = j.at("steps");
    c.batch_size = j.at("batch_size");
    c.total_batch_tokens = j.at("total_batch_tokens");
    c.seed = j.at("seed");
    c.packing = j.at("packing");
    c.eval_every = j.at("eval_every");
    c.eval_tokens = j.at("eval_tokens");
    c.eval_batch_size = j.at("eval_batch_size");
    c.threads = j.at("threads");
    c.peak_gflops = j.at("peak_gflops");
    c.sample_tokens = j.at("sample_tokens");
    c.sample_prompt = j.at("sample_prompt");
    c.save_every = j.at("save_every");
    c.keep_checkpoints = j.at("keep_checkpoints");
    c.on_nan = j.at("on_nan");
  } catch (const nlohmann::json::exception& e) {
    fail("training configuration: %s", e.what());
  }
  return c;
}

}  // namespace nt

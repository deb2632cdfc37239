// SPDX-License-Identifier: MIT
// `nanotrain train`: every flag maps to one TrainConfig field.
#include <charconv>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "core/check.h"
#include "train/train_config.h"

namespace nt::cli {

void add_train_command(CLI::App& app) {
  // Sizes given on the command line must be positive (0 inside TrainConfig means "the default").
  const CLI::Validator kPositive(
      [](std::string& v) -> std::string {
        long long x = 0;
        const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
        if (r.ec != std::errc() || r.ptr != v.data() + v.size()) return "";  // the integer conversion reports it
        return x > 0 ? std::string() : v + ": must be positive";
      },
      "> 0");
  auto cfg = std::make_shared<TrainConfig>();
  auto* c = app.add_subcommand("train", "Train a GPT from scratch under a wall-clock budget and report val_bpb");
  c->add_option("--data", cfg->data_dir, "Prepared data folder (nanotrain data prepare); the default is made on first use from the default corpus with a BPE tokenizer of 8192")->capture_default_str();
  c->add_option("--run-dir", cfg->run_dir, "Run folder to write (default runs/<date>-<time>)");
  c->add_option("--device", cfg->device, "Backend: cpu, ref (slow plain reference)")->capture_default_str();
  c->add_option("--dtype", cfg->dtype, "bf16 | fp32: GEMM precision (fp32 master weights and optimizer state either way; default bf16 where the CPU has AVX-512-BF16)");
  c->add_flag("--profile", cfg->profile, "Print where a step's time goes and write RUN/trace.json (Chrome trace, opens in Perfetto)");
  c->add_option("--time-budget", cfg->time_budget, "Training time (data+fwd+bwd+optimizer): 90s, 5m, 1h")->capture_default_str();
  c->add_option("--steps", cfg->steps, "Train for N optimizer steps instead of a time budget");
  auto* g = "Model";
  c->add_option("--preset", cfg->shape.preset, "tiny | cpu | frontier")->capture_default_str()->group(g);
  c->add_option("--depth", cfg->shape.depth, "Layers; sets d_model = 64*depth rounded up to --head-dim")->check(kPositive)->group(g);
  c->add_option("--d-model", cfg->shape.d_model, "Model width")->check(kPositive)->group(g);
  c->add_option("--n-head", cfg->shape.n_head, "Query heads")->check(kPositive)->group(g);
  c->add_option("--n-kv-head", cfg->shape.n_kv_head, "Key/value heads (grouped-query attention)")->check(kPositive)->group(g);
  c->add_option("--head-dim", cfg->shape.head_dim, "Head dimension")->check(kPositive)->group(g);
  c->add_option("--seq-len", cfg->shape.seq_len, "Sequence length")->check(kPositive)->group(g);
  c->add_option("--vocab-size", cfg->shape.vocab_size, "Vocabulary (default: the tokenizer's)")->check(kPositive)->group(g);
  c->add_option("--rope-base", cfg->shape.rope_base, "Rotary base (default 10000)")->group(g);
  g = "Optimization";
  c->add_option("--batch-size", cfg->batch_size, "Sequences per micro-batch (default 16; frontier 4)")->check(kPositive)->group(g);
  c->add_option("--total-batch-tokens", cfg->total_batch_tokens, "Tokens per optimizer step (gradient accumulation)")->check(kPositive)->group(g);
  c->add_option("--lr-matrix", cfg->optim.lr_matrix, "Muon learning rate")->capture_default_str()->group(g);
  c->add_option("--lr-embed", cfg->optim.lr_embed, "AdamW LR for the embedding (default 0.2*(d/768)^-0.5)")->group(g);
  c->add_option("--lr-head", cfg->optim.lr_head, "AdamW LR for the output head (default 0.004*(d/768)^-0.5)")->group(g);
  c->add_option("--beta1", cfg->optim.beta1, "AdamW beta1")->capture_default_str()->group(g);
  c->add_option("--beta2", cfg->optim.beta2, "AdamW beta2")->capture_default_str()->group(g);
  c->add_option("--adam-eps", cfg->optim.eps, "AdamW epsilon")->capture_default_str()->group(g);
  c->add_option("--weight-decay", cfg->optim.weight_decay, "AdamW decoupled weight decay")->capture_default_str()->group(g);
  c->add_option("--muon-momentum", cfg->optim.momentum, "Muon Nesterov momentum")->capture_default_str()->group(g);
  c->add_option("--ns-steps", cfg->optim.ns_steps, "Muon Newton-Schulz iterations")->capture_default_str()->group(g);
  c->add_option("--warmup-frac", cfg->schedule.warmup_frac, "LR warm-up, fraction of the budget")->capture_default_str()->group(g);
  c->add_option("--warmdown-frac", cfg->schedule.warmdown_frac, "LR linear warm-down, fraction of the budget")->capture_default_str()->group(g);
  c->add_option("--final-lr-frac", cfg->schedule.final_lr_frac, "LR multiplier at the end of warm-down")->capture_default_str()->group(g);
  c->add_option("--packing", cfg->packing, "bestfit (every row starts at a document) or stream")->capture_default_str()->group(g);
  c->add_option("--seed", cfg->seed, "Seed for init and data order")->capture_default_str()->group(g);
  g = "Evaluation and output";
  c->add_option("--eval-every", cfg->eval_every, "0 (end only), N steps, or a training-time duration like 60s")->capture_default_str()->group(g);
  c->add_option("--eval-tokens", cfg->eval_tokens, "Limit validation targets (0 = whole split)")->capture_default_str()->group(g);
  c->add_option("--eval-batch-size", cfg->eval_batch_size, "Validation batch (default --batch-size)")->check(kPositive)->group(g);
  c->add_option("--sample-tokens", cfg->sample_tokens, "Tokens to sample at the end (0 = none)")->capture_default_str()->group(g);
  c->add_option("--sample-prompt", cfg->sample_prompt, "Prompt for the final sample")->capture_default_str()->group(g);
  c->add_option("--threads", cfg->threads, "Threads (0 = all cores)")->capture_default_str()->group(g);
  c->add_option("--peak-gflops", cfg->peak_gflops, "Peak GFLOP/s used for MFU (default: measured on this CPU for the run's dtype, before and after training)")->group(g);
  c->add_flag("--quiet", cfg->quiet, "No progress output")->group(g);
  g = "Checkpoints and faults";
  c->add_option("--save-every", cfg->save_every, "Checkpoint every N steps or training-time duration (0 = end only)")->capture_default_str()->group(g);
  c->add_option("--keep-checkpoints", cfg->keep_checkpoints, "Newest checkpoints kept")->capture_default_str()->group(g);
  c->add_option("--on-nan", cfg->on_nan, "Non-finite loss/gradient: stop, or rollback to the last checkpoint with halved LRs")->capture_default_str()->group(g);
  c->add_option("--resume", cfg->resume, "Continue this run folder from its newest valid checkpoint (its own settings)")->group(g);
  c->callback([cfg, c] {
    if (!cfg->resume.empty())
      for (const CLI::Option* o : c->get_options())
        if (o->count() > 0 && o->get_name() != "--resume" && o->get_name() != "--threads" && o->get_name() != "--quiet")
          fail("%s: cannot be combined with --resume (a resumed run keeps its own settings; only --threads and --quiet may be given)",
               o->get_name().c_str());
    TrainSummary s;
    try {
      s = run_training(*cfg);
    } catch (const Interrupted& stop) {
      std::fprintf(stderr, "nanotrain: %s\n", stop.message.c_str());
      throw ExitCode{128 + stop.signal};
    }
    const auto& j = s.json;
    std::printf("val_bpb %.4f | steps %lld | %.0f tokens in %.1fs (%.0f tok/s, MFU %.1f%%) | overshoot %+.3fs\n",
                j["val_bpb"].get<double>(), (long long)j["steps"].get<int64_t>(), double(j["tokens_trained"].get<int64_t>()),
                j["train_seconds"].get<double>(), j["tokens_per_second"].get<double>(), 100 * j["mfu"].get<double>(),
                j["budget_overshoot_seconds"].get<double>());
    if (!j["sample"].get<std::string>().empty()) std::printf("sample: %s\n", j["sample"].get<std::string>().c_str());
    std::printf("run folder: %s\n", j["run_dir"].get<std::string>().c_str());
  });
}

}  // namespace nt::cli

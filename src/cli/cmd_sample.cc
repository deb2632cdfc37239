// SPDX-License-Identifier: MIT
// `nanotrain sample`: generate text from a run folder's weights with a KV cache.
#include <cstdio>

#include "cli/commands.h"
#include "cli/field_options.h"
#include "core/check.h"
#include "core/system.h"
#include "eval/sampler.h"
#include "kernels/backend.h"
#include "model/weights_io.h"
#include "train/run_folder.h"
#include "train/train_plan.h"

namespace nt::cli {

namespace {

struct SampleFlags {
  std::string run_dir, prompt = "", device = "cpu";
  SampleOptions so;
  bool no_cache = false;
  int threads = 0;

  template <class V>
  void for_each_field(V&& v) {
    v(run_dir, {.flag = "--run-dir", .help = "Run folder written by nanotrain train", .required = true});
    v(prompt, {.flag = "--prompt", .help = "Text to continue (BOS is prepended)", .show_default = true});
    v(so.max_tokens, {.flag = "--max-tokens", .help = "Tokens to generate", .show_default = true, .min = 0,
                      .error = "must be >= 0"});
    v(so.temperature, {.flag = "--temperature", .help = "Sampling temperature (0 = greedy)", .show_default = true,
                       .min = 0, .error = "must be >= 0"});
    v(so.top_k, {.flag = "--top-k", .help = "Sample among the k most likely (0 = all)", .show_default = true,
                 .min = 0, .error = "must be >= 0"});
    v(so.seed, {.flag = "--seed", .help = "Sampling seed", .show_default = true});
    v(device, {.flag = "--device", .help = "Backend: cpu, ref", .show_default = true});
    v(threads, {.flag = "--threads", .help = "Threads (0 = all cores)", .show_default = true, .min = 0,
                .error = "must be >= 0"});
    v(no_cache, {.flag = "--no-kv-cache", .help = "Recompute the whole prefix per token (reference path)"});
  }
};

}  // namespace

void add_sample_command(CLI::App& app) {
  auto o = std::make_shared<SampleFlags>();
  auto* c = app.add_subcommand("sample", "Generate text from a trained model");
  add_field_options(c, *o);
  c->callback([o] {
    validate_fields(*o);
    setup_threads(o->threads);
    TrainedRun run = open_trained_run(o->run_dir);
    check_inference_memory(run.model, 1, o->no_cache ? run.model.seq_len : 1, "sample");
    Gpt model(run.model, backend_for_device(o->device).kernels(), 1, o->no_cache ? run.model.seq_len : 1);
    load_weights(run.weights_path, run.model, model.params());
    std::vector<uint32_t> prompt{run.tokenizer->bos_id()};
    run.tokenizer->encode(o->prompt, prompt);
    o->so.use_kv_cache = !o->no_cache;
    auto ids = sample_tokens(model, prompt, o->so);
    std::printf("%s%s\n", o->prompt.c_str(), run.tokenizer->decode(ids).c_str());
  });
}

}  // namespace nt::cli

// SPDX-License-Identifier: MIT
// `nanotrain sample`: generate text from a run folder's weights with a KV cache.
#include <cstdio>

#include "cli/commands.h"
#include "core/check.h"
#include "core/system.h"
#include "eval/sampler.h"
#include "kernels/backend.h"
#include "model/weights_io.h"
#include "train/run_folder.h"

namespace nt::cli {

void add_sample_command(CLI::App& app) {
  struct Opts {
    std::string run_dir, prompt = "", device = "cpu";
    SampleOptions so;
    bool no_cache = false;
    int threads = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("sample", "Generate text from a trained model");
  c->add_option("--run-dir", o->run_dir, "Run folder written by nanotrain train")->required();
  c->add_option("--prompt", o->prompt, "Text to continue (BOS is prepended)")->capture_default_str();
  c->add_option("--max-tokens", o->so.max_tokens, "Tokens to generate")->capture_default_str();
  c->add_option("--temperature", o->so.temperature, "Sampling temperature (0 = greedy)")->capture_default_str();
  c->add_option("--top-k", o->so.top_k, "Sample among the k most likely (0 = all)")->capture_default_str();
  c->add_option("--seed", o->so.seed, "Sampling seed")->capture_default_str();
  c->add_option("--device", o->device, "Backend: cpu, ref")->capture_default_str();
  c->add_option("--threads", o->threads, "Threads (0 = all cores)")->capture_default_str();
  c->add_flag("--no-kv-cache", o->no_cache, "Recompute the whole prefix per token (reference path)");
  c->callback([o] {
    if (o->so.max_tokens < 0) fail("--max-tokens %d: must be >= 0", o->so.max_tokens);
    if (!(o->so.temperature >= 0)) fail("--temperature %g: must be >= 0", o->so.temperature);
    if (o->so.top_k < 0) fail("--top-k %d: must be >= 0", o->so.top_k);
    if (o->threads < 0) fail("--threads %d: must be >= 0", o->threads);
    setup_threads(o->threads);
    TrainedRun run = open_trained_run(o->run_dir);
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

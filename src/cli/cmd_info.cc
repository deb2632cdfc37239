// SPDX-License-Identifier: MIT
// `nanotrain info`: the machine, the backends, a model shape's size and memory, and the optimizer
// settings (with every variant) that `train` would resolve for it.
#include <omp.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/field_options.h"
#include "core/check.h"
#include "core/system.h"
#include "kernels/backend.h"
#include "model/config.h"
#include "model/gpt.h"
#include "optim/optim_config.h"
#include "train/preset_optim.h"

namespace nt::cli {

void add_info_command(CLI::App& app) {
  auto f = std::make_shared<ShapeFlags>();
  auto batch = std::make_shared<int>(16);
  auto* c = app.add_subcommand("info", "Show the machine, the kernels chosen, and a model's size");
  // The model's shape flags as `train` has them, less --rope-base, which changes no size; 0 means
  // the preset's, so no flag here refuses it.
  add_field_options(c, *f,
                    {.checks = false, .groups = false, .skip = {"--rope-base"},
                     .help = {{"--vocab-size", "Vocabulary (default 257, bytes)"}}});
  auto optim = std::make_shared<OptimConfig>();
  add_field_options(c, *optim, {.groups = false, .skip = {}, .help = {}});
  c->add_option("--batch-size", *batch, "Sequences per micro-batch, for the memory estimate")->capture_default_str();
  c->callback([f, batch, optim] {
    if (*batch <= 0) fail("--batch-size %d: must be positive", *batch);
    ModelConfig m = resolve_model_config(*f, 257);
    std::printf("nanotrain %s on %s\n", NT_VERSION, hostname().c_str());
    std::printf("cpu features: %s | cores available: %d\n", cpu_features().describe().c_str(), omp_get_num_procs());
    std::printf("kernels: %s (default), %s\n", backend_for_device("cpu").kernels().name,
                backend_for_device("ref").kernels().name);
    std::printf("model: %s\n", m.to_json().dump().c_str());
    std::printf("params: %lld total, %lld in matmuls; %.1f MFLOP per training token\n", (long long)count_params(m),
                (long long)count_matmul_params(m), flops_per_token(m, m.seq_len) / 1e6);
    std::printf("activations at batch %d: %.1f MiB\n", *batch, Gpt::activation_bytes(m, *batch, m.seq_len) / 1048576.0);
    std::printf("available memory: %.1f GiB\n", available_memory_bytes() / 1073741824.0);
    apply_preset_optim(f->preset, m.d_model, *optim);
    optim->resolve(m.d_model, m.tie_embeddings);
    std::printf("optimizer: %s\n", optim->to_json().dump().c_str());
  });
}

}  // namespace nt::cli

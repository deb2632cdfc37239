// SPDX-License-Identifier: MIT
// `nanotrain eval bpb`: a run's val_bpb on any text, with the training definition.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/field_options.h"
#include "core/check.h"
#include "core/files.h"
#include "core/system.h"
#include "data/documents.h"
#include "data/loader.h"
#include "eval/bpb.h"
#include "kernels/backend.h"
#include "model/weights_io.h"
#include "train/run_folder.h"
#include "train/train_plan.h"

namespace nt::cli {

namespace {

struct EvalFlags {
  std::string run_dir, device = "cpu", jsonl_field = "text";
  std::vector<std::string> inputs;
  int batch_size = 8, threads = 0;
  bool json = false;

  template <class V>
  void for_each_field(V&& v) {
    v(run_dir, {.flag = "--run-dir", .help = "Run folder written by nanotrain train", .required = true});
    v(inputs, {.flag = "--input", .help = "Text files, folders or .jsonl files", .required = true});
    v(jsonl_field, {.flag = "--jsonl-field", .help = "JSONL field holding the text", .show_default = true});
    v(batch_size, {.flag = "--batch-size", .help = "Sequences per batch", .show_default = true, .min = 1,
                   .error = "must be positive"});
    v(device, {.flag = "--device", .help = "Backend: cpu, ref", .show_default = true});
    v(threads, {.flag = "--threads", .help = "Threads (0 = all cores)", .show_default = true, .min = 0,
                .error = "must be >= 0"});
    v(json, {.flag = "--json", .help = "Print one JSON object instead of text"});
  }
};

}  // namespace

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalFlags>();
  auto* ev = app.add_subcommand("eval", "Evaluate a trained model");
  ev->require_subcommand(1);
  add_eval_core_command(*ev);
  auto* c = ev->add_subcommand("bpb", "Bits per byte of a run's model on text files / folders / JSONL");
  add_field_options(c, *o);
  c->callback([o] {
    validate_fields(*o);
    setup_threads(o->threads);
    TrainedRun run = open_trained_run(o->run_dir);
    const Tokenizer& tok = *run.tokenizer;
    // Same token stream as training data: BOS before every document.
    DocumentOptions dopt;
    dopt.jsonl_field = o->jsonl_field;
    std::vector<std::string> docs;
    read_documents(o->inputs, dopt, docs);
    if (docs.empty()) fail("--input: no text found");
    // The evaluation text goes through the same shard format and validation loader as training
    // data; the shard lives in the system's temporary folder, never in the (maybe read-only) run,
    // under a name created exclusively there (and removed once mapped: the mapping stays valid).
    std::vector<std::unique_ptr<Shard>> shards;
    {
      const TempFile tmp(temp_dir(), "nanotrain-eval-");
      ShardWriter w(tmp.path(), tok.vocab_size(), tok.bos_id(), tok.identity());
      std::vector<uint32_t> ids;
      for (const auto& d : docs) {
        ids.clear();
        tok.encode(d, ids);
        w.add_document(ids);
      }
      w.finish();
      shards.push_back(std::make_unique<Shard>(tmp.path(), nullptr));
    }
    const int T = run.model.seq_len;
    ValLoader val(shards, o->batch_size, T);
    check_inference_memory(run.model, o->batch_size, T, "eval bpb");
    Gpt model(run.model, backend_for_device(o->device).kernels(), o->batch_size, T);
    load_weights(run.weights_path, run.model, model.params());
    BpbResult r = evaluate_bpb(model, val, tok, o->batch_size, T);
    if (o->json) {
      std::printf("%s\n", nlohmann::json{{"bpb", r.bpb}, {"loss", r.loss}, {"targets", r.targets}, {"bytes", r.bytes},
                                         {"seconds", r.seconds}}
                              .dump()
                              .c_str());
    } else {
      std::printf("bpb %.4f | loss %.4f nats/token | %llu targets, %llu bytes | %.1fs\n", r.bpb, r.loss,
                  (unsigned long long)r.targets, (unsigned long long)r.bytes, r.seconds);
    }
  });
}

}  // namespace nt::cli

// SPDX-License-Identifier: MIT
// KernelTable's completeness against its declared capabilities (kernels.h).
#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/kernels.h"

namespace nt {

namespace {
struct Entry {
  const char* name;
  const void* fn;
};
// reinterpret_cast: a function pointer's nullness is all that is looked at.
template <class F>
Entry entry(const char* name, F* fn) {
  return {name, reinterpret_cast<const void*>(fn)};
}

std::vector<Entry> fp32_ops(const KernelTable& t) {
  return {entry("matmul", t.matmul),           entry("rmsnorm_fwd", t.rmsnorm_fwd),
          entry("rmsnorm_bwd", t.rmsnorm_bwd), entry("rope_fwd", t.rope_fwd),
          entry("rope_bwd", t.rope_bwd),       entry("rope_norm_fwd", t.rope_norm_fwd),
          entry("rope_norm_bwd", t.rope_norm_bwd), entry("attention_fwd", t.attention_fwd),
          entry("attention_bwd", t.attention_bwd), entry("relu2_fwd", t.relu2_fwd),
          entry("relu2_bwd", t.relu2_bwd),     entry("gelu_fwd", t.gelu_fwd),
          entry("gelu_bwd", t.gelu_bwd),       entry("swiglu_fwd", t.swiglu_fwd),
          entry("swiglu_bwd", t.swiglu_bwd),   entry("softcap_xent", t.softcap_xent),
          entry("embed_fwd", t.embed_fwd),     entry("embed_bwd", t.embed_bwd),
          entry("adamw_step", t.adamw_step),   entry("axpby", t.axpby),
          entry("nesterov", t.nesterov),       entry("transpose", t.transpose),
          entry("sum_squares", t.sum_squares)};
}

std::vector<Entry> bf16_ops(const KernelTable& t) {
  return {entry("to_bf16", t.to_bf16),
          entry("to_bf16_rows", t.to_bf16_rows),
          entry("rmsnorm_fwd_bf16", t.rmsnorm_fwd_bf16),
          entry("rmsnorm_bwd_bf16", t.rmsnorm_bwd_bf16),
          entry("relu2_fwd_bf16", t.relu2_fwd_bf16),
          entry("relu2_bwd_bf16", t.relu2_bwd_bf16),
          entry("gelu_fwd_bf16", t.gelu_fwd_bf16),
          entry("gelu_bwd_bf16", t.gelu_bwd_bf16),
          entry("swiglu_fwd_bf16", t.swiglu_fwd_bf16),
          entry("swiglu_bwd_bf16", t.swiglu_bwd_bf16),
          entry("matmul_bf16", t.matmul_bf16),
          entry("matmul_bf16_out", t.matmul_bf16_out),
          entry("softcap_xent_bf16", t.softcap_xent_bf16),
          entry("attention_fwd_bf16", t.attention_fwd_bf16),
          entry("attention_bwd_bf16", t.attention_bwd_bf16)};
}

// Each optional op with whether the capabilities declare it.
std::vector<std::pair<Entry, bool>> optional_ops(const KernelTable& t) {
  const KernelTable::Capabilities& c = t.caps;
  return {{entry("matmul_relu2", t.matmul_relu2), c.matmul_relu2},
          {entry("matmul_bf16_relu2", t.matmul_bf16_relu2), c.matmul_bf16_relu2},
          {entry("matmul_bf16_out_relu2", t.matmul_bf16_out_relu2), c.matmul_bf16_out_relu2},
          {entry("matmul_bf16_out_relu2_bwd", t.matmul_bf16_out_relu2_bwd), c.matmul_bf16_out_relu2},
          {entry("matmul_bf16_gelu", t.matmul_bf16_gelu), c.matmul_bf16_out_gelu},
          {entry("matmul_bf16_out_gelu", t.matmul_bf16_out_gelu), c.matmul_bf16_out_gelu},
          {entry("matmul_bf16_out_gelu_bwd", t.matmul_bf16_out_gelu_bwd), c.matmul_bf16_out_gelu},
          {entry("newton_schulz_bf16", t.newton_schulz_bf16), c.newton_schulz_bf16},
          {entry("symmetric_product_f32", t.symmetric_product_f32), c.symmetric_product_f32},
          {entry("packed_b_bf16_size", t.packed_b_bf16_size), c.packed_b_bf16},
          {entry("pack_b_bf16", t.pack_b_bf16), c.packed_b_bf16},
          {entry("matmul_bf16_packed_b", t.matmul_bf16_packed_b), c.packed_b_bf16}};
}
}  // namespace

std::vector<std::string> missing_ops(const KernelTable& t) {
  std::vector<std::string> missing;
  if (t.caps.fp32)
    for (const Entry& e : fp32_ops(t))
      if (!e.fn) missing.emplace_back(e.name);
  if (t.caps.bf16)
    for (const Entry& e : bf16_ops(t))
      if (!e.fn) missing.emplace_back(e.name);
  for (const auto& [e, declared] : optional_ops(t))
    if (declared && !e.fn) missing.emplace_back(e.name);
  return missing;
}

std::vector<std::string> table_problems(const KernelTable& t) {
  std::vector<std::string> problems;
  for (const std::string& name : missing_ops(t)) problems.push_back(name + " is null");
  for (const auto& [e, declared] : optional_ops(t))
    if (!declared && e.fn) problems.push_back(std::string(e.name) + " is set but not declared in caps");
  if (!t.caps.fp32 && !t.caps.bf16) problems.emplace_back("declares neither fp32 nor bf16");
  return problems;
}

void validate(const KernelTable& t) {
  const std::vector<std::string> problems = table_problems(t);
  if (problems.empty()) return;
  std::string all;
  for (const std::string& p : problems) all += (all.empty() ? "" : "; ") + p;
  fail("kernel table %s: %s", t.name ? t.name : "(unnamed)", all.c_str());
}

}  // namespace nt

// SPDX-License-Identifier: MIT
// The CPU backend's kernel tables, one per instruction-set level, and device selection.
#include <array>

#include "backends/cpu/cpu_ops.h"
#include "core/check.h"
#include "core/system.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_tables.h"
#include "kernels/kernels.h"

namespace nt {

namespace {
// f where the level has it, else null (an optional entry).
template <class F>
F* when(bool has, F* f) {
  return has ? f : nullptr;
}

KernelTable make_cpu_table(CpuIsa isa) {
  const bool avx512 = isa >= CpuIsa::kAvx512, bf16 = isa >= CpuIsa::kAvx512Bf16, amx = isa == CpuIsa::kAmx;
  const cpu::AttentionKernels& att_bf16 = amx    ? cpu::attention_tiled_bf16_amx
                                          : bf16 ? cpu::attention_tiled_bf16_avx512
                                                 : cpu::attention_tiled_bf16_avx2;
  return {
      .name = cpu_isa_name(isa),
      .caps = {.fp32 = true,
               .bf16 = true,
               .matmul_relu2 = avx512,
               .matmul_bf16_relu2 = bf16,
               .matmul_bf16_out_relu2 = bf16 && !amx,
               .matmul_bf16_out_gelu = bf16 && !amx,
               .newton_schulz_bf16 = bf16,
               .symmetric_product_f32 = avx512,
               .packed_b_bf16 = bf16},
      .matmul = avx512 ? cpu::matmul_avx512 : cpu::matmul,
      .rmsnorm_fwd = cpu::rmsnorm_fwd,
      .rmsnorm_bwd = cpu::rmsnorm_bwd,
      .rope_fwd = cpu::rope_fwd,
      .rope_bwd = cpu::rope_bwd,
      .rope_norm_fwd = cpu::rope_norm_fwd,
      .rope_norm_bwd = cpu::rope_norm_bwd,
      .attention_fwd = avx512 ? cpu::attention_tiled_f32_avx512.fwd : cpu::attention_fwd,
      .attention_bwd = avx512 ? cpu::attention_tiled_f32_avx512.bwd : cpu::attention_bwd,
      .relu2_fwd = cpu::relu2_fwd,
      .relu2_bwd = cpu::relu2_bwd,
      .gelu_fwd = cpu::gelu_fwd,
      .gelu_bwd = cpu::gelu_bwd,
      .swiglu_fwd = cpu::swiglu_fwd,
      .swiglu_bwd = cpu::swiglu_bwd,
      .softcap_xent = bf16 ? cpu::softcap_xent_avx512 : cpu::softcap_xent,
      .embed_fwd = cpu::embed_fwd,
      .embed_bwd = cpu::embed_bwd,
      .adamw_step = cpu::adamw_step,
      .axpby = cpu::axpby,
      .nesterov = cpu::nesterov,
      .transpose = cpu::transpose,
      .sum_squares = cpu::sum_squares,
      .to_bf16 = bf16 ? cpu::to_bf16_avx512 : cpu::to_bf16_avx2,
      .to_bf16_rows = bf16 ? cpu::to_bf16_rows_avx512 : cpu::to_bf16_rows_avx2,
      .rmsnorm_fwd_bf16 = bf16 ? cpu::rmsnorm_fwd_bf16_avx512 : cpu::rmsnorm_fwd_bf16_avx2,
      .rmsnorm_bwd_bf16 = bf16 ? cpu::rmsnorm_bwd_bf16_avx512 : cpu::rmsnorm_bwd_bf16_avx2,
      .relu2_fwd_bf16 = bf16 ? cpu::relu2_fwd_bf16_avx512 : cpu::relu2_fwd_bf16_avx2,
      .relu2_bwd_bf16 = bf16 ? cpu::relu2_bwd_bf16_avx512 : cpu::relu2_bwd_bf16_avx2,
      .gelu_fwd_bf16 = bf16 ? cpu::gelu_fwd_bf16_avx512 : cpu::gelu_fwd_bf16,
      .gelu_bwd_bf16 = bf16 ? cpu::gelu_bwd_bf16_avx512 : cpu::gelu_bwd_bf16,
      .swiglu_fwd_bf16 = cpu::swiglu_fwd_bf16,
      .swiglu_bwd_bf16 = cpu::swiglu_bwd_bf16,
      .matmul_bf16 = amx ? cpu::matmul_bf16_tiles : bf16 ? cpu::matmul_bf16_avx512 : cpu::matmul_bf16_widen,
      .matmul_bf16_out = amx    ? cpu::matmul_bf16_out_tiles
                         : bf16 ? cpu::matmul_bf16_out_avx512
                                : cpu::matmul_bf16_out_widen,
      .softcap_xent_bf16 = bf16 ? cpu::softcap_xent_bf16_avx512 : cpu::softcap_xent_bf16_avx2,
      .attention_fwd_bf16 = att_bf16.fwd,
      .attention_bwd_bf16 = att_bf16.bwd,
      .bf16_matrix_tiles = amx,
      .matmul_bf16_relu2 = amx ? cpu::matmul_bf16_relu2_tiles : when(bf16, cpu::matmul_bf16_relu2_avx512),
      .matmul_relu2 = when(avx512, cpu::matmul_relu2_avx512),
      .matmul_bf16_out_relu2 = when(bf16 && !amx, cpu::matmul_bf16_out_relu2_avx512),
      .matmul_bf16_out_relu2_bwd = when(bf16 && !amx, cpu::matmul_bf16_out_relu2_bwd_avx512),
      .matmul_bf16_gelu = when(bf16 && !amx, cpu::matmul_bf16_gelu_avx512),
      .matmul_bf16_out_gelu = when(bf16 && !amx, cpu::matmul_bf16_out_gelu_avx512),
      .matmul_bf16_out_gelu_bwd = when(bf16 && !amx, cpu::matmul_bf16_out_gelu_bwd_avx512),
      .newton_schulz_bf16 = amx ? cpu::newton_schulz_bf16_amx : when(bf16, cpu::newton_schulz_bf16_avx512),
      .symmetric_product_f32 = when(avx512, cpu::symmetric_product_f32_avx512),
      .packed_b_bf16_size = amx ? cpu::amx_packed_b_size : when(bf16, cpu::rows_packed_b_size),
      .pack_b_bf16 = amx ? cpu::amx_pack_b : when(bf16, cpu::rows_pack_b),
      .matmul_bf16_packed_b = amx ? cpu::matmul_bf16_packed_b_tiles : when(bf16, cpu::matmul_bf16_packed_b_avx512),
  };
}

std::vector<const KernelTable*> executable_tables() {
  cpu::limit_onednn_isa();  // before oneDNN's first primitive
  const CpuFeatures f = cpu_features();
  const bool avx512 = f.avx512f && f.avx512bw;
  const bool bf16 = avx512 && f.avx512bf16, amx = bf16 && f.amx_bf16;
  std::vector<const KernelTable*> tables = {&cpu_kernel_table(CpuIsa::kAvx2)};
  if (avx512) tables.push_back(&cpu_kernel_table(CpuIsa::kAvx512));
  if (bf16) tables.push_back(&cpu_kernel_table(CpuIsa::kAvx512Bf16));
  if (amx) tables.push_back(&cpu_kernel_table(CpuIsa::kAmx));
  return tables;
}
}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx2: return "cpu-avx2";
    case CpuIsa::kAvx512: return "cpu-avx512";
    case CpuIsa::kAvx512Bf16: return "cpu-avx512bf16";
    case CpuIsa::kAmx: return "cpu-amx";
  }
  return "cpu-?";
}

const KernelTable& cpu_kernel_table(CpuIsa isa) {
  static const std::array<KernelTable, 4> tables = [] {
    std::array<KernelTable, 4> t = {make_cpu_table(CpuIsa::kAvx2), make_cpu_table(CpuIsa::kAvx512),
                                    make_cpu_table(CpuIsa::kAvx512Bf16), make_cpu_table(CpuIsa::kAmx)};
    for (const KernelTable& k : t) validate(k);
    return t;
  }();
  return tables[size_t(isa)];
}

const std::vector<const KernelTable*>& cpu_kernel_tables() {
  static const std::vector<const KernelTable*> tables = executable_tables();
  return tables;
}

bool cpu_can_run(CpuIsa isa) {
  for (const KernelTable* t : cpu_kernel_tables())
    if (t == &cpu_kernel_table(isa)) return true;
  return false;
}

const KernelTable& cpu_kernels() { return *cpu_kernel_tables().back(); }

}  // namespace nt

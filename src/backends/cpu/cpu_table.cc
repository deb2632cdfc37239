// SPDX-License-Identifier: MIT
// The CPU backend's kernel table, and device selection.
#include "backends/cpu/cpu_ops.h"
#include "core/check.h"
#include "core/system.h"
#include "backends/cpu/cpu_backend.h"
#include "kernels/kernels.h"

namespace nt {

namespace {
KernelTable make_cpu_table() {
  cpu::limit_onednn_isa();
  const CpuFeatures f = cpu_features();
  const bool avx512 = f.avx512f && f.avx512bw;
  const bool bf16 = avx512 && f.avx512bf16, amx = bf16 && f.amx_bf16;
  const cpu::AttentionKernels& att_bf16 = amx    ? cpu::attention_tiled_bf16_amx
                                          : bf16 ? cpu::attention_tiled_bf16_avx512
                                                 : cpu::attention_tiled_bf16_avx2;
  KernelTable t = {
      amx ? "cpu-amx" : bf16 ? "cpu-avx512bf16" : avx512 ? "cpu-avx512" : "cpu-avx2",
      avx512 ? cpu::matmul_avx512 : cpu::matmul,
      cpu::rmsnorm_fwd,
      cpu::rmsnorm_bwd,
      cpu::rope_fwd,
      cpu::rope_bwd,
      cpu::rope_norm_fwd,
      cpu::rope_norm_bwd,
      avx512 ? cpu::attention_tiled_f32_avx512.fwd : cpu::attention_fwd,
      avx512 ? cpu::attention_tiled_f32_avx512.bwd : cpu::attention_bwd,
      cpu::relu2_fwd,
      cpu::relu2_bwd,
      bf16 ? cpu::softcap_xent_avx512 : cpu::softcap_xent,
      cpu::embed_fwd,
      cpu::embed_bwd,
      cpu::adamw_step,
      cpu::axpby,
      cpu::nesterov,
      cpu::transpose,
      cpu::sum_squares,
      bf16 ? cpu::to_bf16_avx512 : cpu::to_bf16_avx2,
      bf16 ? cpu::to_bf16_rows_avx512 : cpu::to_bf16_rows_avx2,
      bf16 ? cpu::rmsnorm_fwd_bf16_avx512 : cpu::rmsnorm_fwd_bf16_avx2,
      bf16 ? cpu::rmsnorm_bwd_bf16_avx512 : cpu::rmsnorm_bwd_bf16_avx2,
      bf16 ? cpu::relu2_fwd_bf16_avx512 : cpu::relu2_fwd_bf16_avx2,
      bf16 ? cpu::relu2_bwd_bf16_avx512 : cpu::relu2_bwd_bf16_avx2,
      amx ? cpu::matmul_bf16_tiles : bf16 ? cpu::matmul_bf16_avx512 : cpu::matmul_bf16_widen,
      amx ? cpu::matmul_bf16_out_tiles : bf16 ? cpu::matmul_bf16_out_avx512 : cpu::matmul_bf16_out_widen,
      bf16 ? cpu::softcap_xent_bf16_avx512 : cpu::softcap_xent_bf16_avx2,
      att_bf16.fwd,
      att_bf16.bwd,
  };
  t.bf16_matrix_tiles = amx;
  if (avx512) t.symmetric_product_f32 = cpu::symmetric_product_f32_avx512, t.matmul_relu2 = cpu::matmul_relu2_avx512;
  if (amx) {
    t.newton_schulz_bf16 = cpu::newton_schulz_bf16_amx, t.matmul_bf16_relu2 = cpu::matmul_bf16_relu2_tiles;
    t.packed_b_bf16_size = cpu::amx_packed_b_size, t.pack_b_bf16 = cpu::amx_pack_b;
    t.matmul_bf16_packed_b = cpu::matmul_bf16_packed_b_tiles;
  } else if (bf16) {
    t.newton_schulz_bf16 = cpu::newton_schulz_bf16_avx512;
    t.packed_b_bf16_size = cpu::rows_packed_b_size, t.pack_b_bf16 = cpu::rows_pack_b;
    t.matmul_bf16_packed_b = cpu::matmul_bf16_packed_b_avx512;
    t.matmul_bf16_out_relu2 = cpu::matmul_bf16_out_relu2_avx512;
    t.matmul_bf16_out_relu2_bwd = cpu::matmul_bf16_out_relu2_bwd_avx512;
    t.matmul_bf16_relu2 = cpu::matmul_bf16_relu2_avx512;
  }
  return t;
}
}  // namespace

const KernelTable& cpu_kernels() {
  static const KernelTable t = make_cpu_table();
  return t;
}

}  // namespace nt

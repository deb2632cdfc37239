// SPDX-License-Identifier: MIT
// The kernel tests' cases as data: per op family, the shapes (awkward ones: 1, 7, a vector's
// lanes - 1 and + 1, odd heads and dims, the paths the dispatch rules pick), transposes and
// betas that every CPU kernel table is checked on against the reference in double
// (tests/kernels/), and that `nanotrain bench --kernel-cases` times on every table this machine
// runs. Pure data: the tests and the benchmark read the same cases.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace nt::cases {

inline std::string transposes_name(bool ta, bool tb) { return std::string(ta ? "t" : "n") + (tb ? "t" : "n"); }

// C(m, n) = op(A) op(B) + beta C, for each beta listed; threads 0: all of OpenMP's; gram: B is
// A (X X^T, which takes the symmetric paths).
struct MatmulCase {
  int64_t m, n, k;
  bool ta, tb;
  std::vector<double> betas;
  int threads = 0;
  bool gram = false;
  std::string name() const {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + "_" + transposes_name(ta, tb) +
           (gram ? "_gram" : "") + (threads ? "_threads" + std::to_string(threads) : "");
  }
};

// Every transpose and beta 0, 1, 0.5 on these; shapes with k > n take the matmul primitive on
// C = A B^T (matmul_cpu.cc), the others sgemm. On AVX-512, 130x40x66 with B transposed (k
// even, k >= n, m >= 2 n) takes our own fp32 GEMM (sgemm_nt_avx512) for beta 0 and 1, oneDNN
// for beta 0.5; 1100x512x40 with A transposed takes sgemm_at_avx512 (m >= 2 n, n >= 512);
// 200x9x33 transposed-A the matmul primitive (m >= 8 n, the output head's dW). Then shapes the
// table's rules send to kernels of their own (on AVX-512, matmul_cpu.cc): A B with A tall and
// B 512 wide, threaded; on one thread (Muon's Newton-Schulz), the Gram product X X^T and a
// square times a wide matrix.
inline std::vector<MatmulCase> matmul_cases() {
  std::vector<MatmulCase> cases;
  const int64_t shapes[][3] = {{1, 1, 1},     {7, 9, 17},    {33, 65, 129}, {64, 31, 257},  {200, 9, 33},
                               {130, 40, 66}, {1100, 512, 40}, {64, 33, 17}, {15, 17, 31}};
  for (const auto& s : shapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) cases.push_back({s[0], s[1], s[2], ta, tb, {0.0, 1.0, 0.5}});
  cases.push_back({4100, 512, 520, false, false, {1.0}});
  cases.push_back({160, 160, 96, false, true, {0.0}, 1, true});
  cases.push_back({130, 130, 400, false, true, {0.0}, 1, true});
  cases.push_back({160, 300, 160, false, false, {1.0}, 1});
  return cases;
}

// The bf16 GEMM (fp32 C), every transpose, beta 0 and 1.
inline std::vector<MatmulCase> matmul_bf16_cases() {
  std::vector<MatmulCase> cases;
  const int64_t shapes[][3] = {{1, 1, 1}, {37, 19, 45}, {130, 67, 258}, {5, 300, 64}, {64, 33, 17}, {15, 17, 31}};
  for (const auto& s : shapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) cases.push_back({s[0], s[1], s[2], ta, tb, {0.0, 1.0}});
  return cases;
}

// The bf16-output GEMM, every transpose (beta 0).
inline std::vector<MatmulCase> matmul_bf16_out_cases() {
  std::vector<MatmulCase> cases;
  const int64_t shapes[][3] = {{1, 1, 1}, {37, 19, 45}, {130, 67, 258}, {96, 200, 96}, {64, 33, 17}};
  for (const auto& s : shapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) cases.push_back({s[0], s[1], s[2], ta, tb, {0.0}});
  return cases;
}

// Causal grouped-query attention: q (B, T, H, D), k and v (B, T, KVH, D).
// window: kernels.h's (query t attends to keys t - window .. t); the default, kFullWindow, is causal.
struct AttentionCase {
  int64_t b, t, h, kvh, d;
  int64_t window = kFullWindow;
  std::string name() const {
    return "b" + std::to_string(b) + "_t" + std::to_string(t) + "_h" + std::to_string(h) + "_kv" +
           std::to_string(kvh) + "_d" + std::to_string(d) + (window < t ? "_w" + std::to_string(window) : "");
  }
};

// Sliding windows: shorter than a query block (T 20, W 5: one block, every row cut), W 0 (each
// query sees itself), W T - 2 (one key cut), windows that are not multiples of the blocks or of
// the kernels' 16-key alignment, windows whose keys the tiled backward takes as one span (T 900,
// 1100, 600) and one too wide for that, in several spans (T 1100, W 1050), and 64-row blocks
// (T 1100).
inline std::vector<AttentionCase> attention_window_cases() {
  return {{1, 20, 2, 2, 7, 5},      {2, 70, 3, 1, 24, 0},     {2, 7, 3, 1, 24, 1},
          {1, 33, 4, 2, 18, 31},    {1, 150, 4, 2, 32, 37},   {1, 129, 2, 1, 64, 64},
          {1, 17, 3, 1, 15, 3},     {1, 900, 2, 1, 128, 300}, {1, 1100, 1, 1, 72, 512},
          {1, 1100, 1, 1, 72, 1050}, {3, 600, 1, 1, 112, 200}, {2, 40, 4, 2, 128, 17}};
}

// T 900 at D 128 or 72: the tiled backward takes its keys in several spans (key_span); T 1100:
// past T 1024, 64-row query blocks; 3 x 600 at D 112: three tasks whose rows are not fetched
// ahead (over 512 KiB). Then the windowed cases.
inline std::vector<AttentionCase> attention_cases() {
  std::vector<AttentionCase> cases = {
      {1, 1, 1, 1, 2},    {2, 7, 3, 1, 24},    {1, 33, 4, 2, 18},   {2, 70, 2, 2, 64},    {1, 150, 4, 2, 32},
      {1, 129, 2, 1, 64}, {1, 20, 2, 2, 7},    {1, 900, 2, 1, 128}, {1, 700, 2, 2, 72},   {1, 1100, 1, 1, 72},
      {3, 600, 1, 1, 112}, {1, 17, 3, 1, 15}};
  for (const AttentionCase& c : attention_window_cases()) cases.push_back(c);
  return cases;
}
// The bf16 attention's: as the fp32 ones, with 2 x 40 x 128 and 1 x 35 x 48 in place of 1 x 700 x 72.
inline std::vector<AttentionCase> attention_bf16_cases() {
  std::vector<AttentionCase> cases = {
      {1, 1, 1, 1, 2},    {2, 7, 3, 1, 24},    {1, 33, 4, 2, 18},   {2, 70, 2, 2, 64},  {1, 150, 4, 2, 32},
      {1, 129, 2, 1, 64}, {1, 20, 2, 2, 7},    {2, 40, 4, 2, 128},  {1, 35, 2, 2, 48},  {1, 900, 2, 1, 128},
      {1, 1100, 1, 1, 72}, {3, 600, 1, 1, 112}, {1, 17, 3, 1, 15}};
  for (const AttentionCase& c : attention_window_cases()) cases.push_back(c);
  return cases;
}

// A (rows, width) operand of the row kernels (RMSNorm, cross-entropy over a vocabulary of
// `width`, ReLU² over all elements). 64 x 1: a one-word vocabulary's loss and gradient are
// exactly 0, whatever the logit.
struct RowsCase {
  int64_t rows, width;
  std::string name() const { return std::to_string(rows) + "x" + std::to_string(width); }
};
inline std::vector<RowsCase> row_cases() {
  return {{1, 1},  {3, 2},    {9, 7},    {9, 15},  {9, 17},       {9, 64}, {9, 129},
          {13, 257}, {7, 143}, {31, 1000}, {5, 8192 + 3}, {64, 1}, {2, 31}, {3, 33}};
}
// The norms with a bf16 copy.
inline std::vector<RowsCase> row_bf16_cases() { return {{1, 1}, {9, 17}, {37, 45}, {130, 512}, {3, 1000}, {2, 31}}; }

// Rotary embedding (and the fused QK-norm) on x (B, T, H, D); odd D leaves one element of each
// row unrotated.
struct RopeCase {
  int64_t b, t, h, d;
  std::string name() const {
    return "b" + std::to_string(b) + "_t" + std::to_string(t) + "_h" + std::to_string(h) + "_d" + std::to_string(d);
  }
};
inline std::vector<RopeCase> rope_cases() {
  return {{2, 9, 3, 10}, {1, 5, 2, 7}, {2, 3, 4, 64}, {1, 1, 1, 2}, {1, 7, 3, 34}};
}

}  // namespace nt::cases

// SPDX-License-Identifier: MIT
// The CPU backend's GEMM dispatch: one ordered table of routes (gemm_routes.cc). Each routing
// entry point (gemm.h: matmul, matmul_avx512, matmul_bf16_tiles, ...) walks the routes of its op
// at its kernel table's ISA tier and runs the first route whose tier is within its own, whose
// pattern and condition hold and whose kernel takes the call; every walk ends with a route that
// takes everything (oneDNN, or a composed form).
#pragma once
#include <cstdint>
#include <string>

#include "kernels/exec.h"

namespace nt::cpu {

// The product families, one per routing entry-point signature.
enum class GemmOp : uint8_t {
  kF32,              // C = op(A) op(B) + beta C, fp32
  kF32Relu2,         // the same with one operand read through relu2 (KernelTable::matmul_relu2)
  kBf16,             // bf16 operands, fp32 C (KernelTable::matmul_bf16)
  kBf16Relu2,        // the same with one operand read through relu2 (GELU where the call says gelu)
  kBf16Out,          // bf16 operands, bf16 C (beta 0)
  kBf16OutRelu2,     // and relu2(C) written beside it (GELU's where the call says gelu)
  kBf16OutRelu2Bwd,  // C = relu2's (GELU's) gradient of the product, from the pre-activation
  kBf16PackedB,      // fp32 C, op(B) packed once by the table's pack_b_bf16
  kCount,
};

// The kernel tables' tiers, each including the ones before it: a walk at tier T takes the routes
// of tiers up to T. The entry points of one table walk at its tier (cpu_table.cc picks them by
// CPUID); the fp32 ones at kAvx2 (matmul) or kAvx512 (matmul_avx512).
enum class Isa : uint8_t { kAvx2, kAvx512, kAvx512Bf16, kAmx };

// One call, as every route sees it. Pointers are the op's types (float for fp32, uint16_t for
// bf16); for kBf16PackedB, b is the packed op(B) and tb is false.
struct GemmCall {
  void* c;
  const void* a;
  const void* b;
  int64_t m, n, k;
  bool ta, tb;
  float beta;                     // 0 for the bf16-C ops
  bool relu2_a = false;           // kF32Relu2, kBf16Relu2: A (else B) is read through relu2
  uint16_t* act = nullptr;        // kBf16OutRelu2: relu2(C) goes there
  const uint16_t* inp = nullptr;  // kBf16OutRelu2Bwd: the pre-activation
  bool gelu = false;              // kBf16Relu2 at kAvx512Bf16, kBf16OutRelu2{,Bwd}: GELU, not relu2
  int threads = 1;                // ctx->threads(): the routes' conditions read it
  const ExecContext* ctx = nullptr;  // what the kernels run with (null only where no route runs)
};

// A kernel as the routes use it: `takes` is the shapes it accepts (it would return false, having
// done nothing, on the others); `run` may still decline at run time (oneDNN's matmul primitive
// where oneDNN has only its reference implementation), and then the walk goes on.
struct GemmKernel {
  const char* name;
  bool (*takes)(const GemmCall&);
  const char* limits;  // takes as text ("" where it takes every call)
  bool (*run)(const GemmCall&);
};

// What a route needs of the call's form before its condition is asked.
enum class Trans : uint8_t { kAny, kNo, kYes };
enum class Beta : uint8_t { kAny, kZeroOrOne };
enum class Gram : uint8_t { kAny, kYes, kNo };  // is_gram (gemm.h)
enum class Relu2 : uint8_t { kAny, kA, kB };    // which operand goes through relu2 (relu2 ops)
struct GemmPattern {
  Trans ta = Trans::kAny, tb = Trans::kAny;
  Beta beta = Beta::kAny;
  Gram gram = Gram::kAny;
  Relu2 relu2 = Relu2::kAny;
};

struct GemmRoute {
  GemmOp op;
  Isa isa;  // the least tier whose walk includes the route
  GemmPattern pattern;
  bool (*when)(const GemmCall&);  // nullptr: always
  const char* condition;          // when as text
  const GemmKernel* kernel;
  const char* why;  // the measurement that justifies the route (docs/BENCHMARKS.md has the rest)
};

// Every route, grouped by op, in walk order.
struct GemmRouteList {
  const GemmRoute* routes;
  int count;
};
GemmRouteList gemm_routes();

// The route a walk at `tier` takes for `call`, taking every run to succeed (oneDNN with a jit
// kernel for the product); nullptr where none does (an op that tier has no entry point for).
const GemmRoute* gemm_route_for(GemmOp op, Isa tier, const GemmCall& call);

// The walk itself: runs the route gemm_route_for would pick (or the next, where a run declines).
void gemm_dispatch(GemmOp op, Isa tier, const GemmCall& call);

// The table as text, one route a line (op, tier, pattern, condition, kernel and its limits, why),
// for `nanotrain bench --routes`.
std::string gemm_routes_text();
const char* gemm_op_name(GemmOp op);
const char* isa_name(Isa isa);

}  // namespace nt::cpu

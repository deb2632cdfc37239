// SPDX-License-Identifier: MIT
// The precision of a run's GEMMs, chosen once (by the backend's default or --dtype) and handed to
// the model, which picks its op set from it.
#pragma once
#include <cstring>

#include "core/check.h"

namespace nt {

// kFp32: everything fp32 (exact; the parity tests). kBf16: every GEMM of forward and backward
// takes bf16 operands with fp32 accumulation; weights, gradients and optimizer state stay fp32.
enum class Precision { kFp32, kBf16 };

// "fp32" / "bf16" -> Precision; anything else is an nt::Error naming --dtype.
inline Precision parse_precision(const char* s) {
  if (std::strcmp(s, "fp32") == 0) return Precision::kFp32;
  if (std::strcmp(s, "bf16") == 0) return Precision::kBf16;
  fail("--dtype %s: unknown (fp32, bf16)", s);
}

inline const char* precision_name(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp32"; }

}  // namespace nt

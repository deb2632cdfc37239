# Warnings for the project's own targets only (no global flags).
add_library(nt_warnings INTERFACE)
target_compile_options(nt_warnings INTERFACE -Wall -Wextra -Wno-unused-parameter
  # GCC 12 reports false -Wrestrict overlaps inside std::string (GCC bug 105329).
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>
  # GCC 12 loses the system-header status of what it reads from a precompiled header, so its
  # known false bounds inside std::string's inlined memcpy surface in every file that appends to
  # a string; the sanitizer builds check bounds at run time instead.
  "$<$<AND:$<CXX_COMPILER_ID:GNU>,$<BOOL:${NT_PCH}>>:-Wno-array-bounds;-Wno-stringop-overflow>"
  # clang reports "#pragma omp simd" loops it did not vectorize (always, under the sanitizers'
  # instrumentation); the pragma is a hint, not a requirement.
  $<$<CXX_COMPILER_ID:Clang>:-Wno-pass-failed>)
if(NT_WERROR)
  target_compile_options(nt_warnings INTERFACE -Werror)
endif()
# The floor is x86-64 with AVX2+FMA; AVX-512 paths live in their own translation units and
# are chosen at run time (see src/backends/cpu/cpu_features.h).
add_library(nt_arch INTERFACE)
target_compile_options(nt_arch INTERFACE -mavx2 -mfma -mf16c)
if(NT_SANITIZE)
  add_compile_options(-fsanitize=${NT_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${NT_SANITIZE})
endif()

# Every dependency is a Debian package, found here; nothing is fetched.
find_package(OpenMP REQUIRED)          # one thread pool, shared with oneDNN (GNU OpenMP)
find_package(nlohmann_json 3 REQUIRED) # config.json, metrics.jsonl, safetensors headers
find_package(CLI11 REQUIRED)           # subcommands, --help, rejection of unknown flags
find_package(OpenSSL REQUIRED)         # SHA-256 of shards, checkpoints and downloads
find_package(yaml-cpp REQUIRED)        # core.yaml of CORE evaluation bundles
find_package(tomlplusplus 3 REQUIRED)  # sweep files in TOML
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)  # tokenizer pre-split regex (JIT)
find_library(DNNL_LIBRARY NAMES dnnl REQUIRED)                # GEMMs near the machine's peak
find_path(DNNL_INCLUDE_DIR NAMES dnnl.h REQUIRED)
add_library(nt_dnnl INTERFACE)
target_link_libraries(nt_dnnl INTERFACE ${DNNL_LIBRARY})
target_include_directories(nt_dnnl INTERFACE ${DNNL_INCLUDE_DIR})
# Optional: data-parallel training over several processes or machines (src/dist/).
find_package(MPI COMPONENTS CXX QUIET)
option(NT_MPI "Build with MPI (training over several processes; on where MPI is found)" ${MPI_CXX_FOUND})
if(NT_MPI AND NOT MPI_CXX_FOUND)
  message(FATAL_ERROR "NT_MPI=ON but no MPI for C++ was found (Debian: libopenmpi-dev)")
endif()

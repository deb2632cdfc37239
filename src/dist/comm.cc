// SPDX-License-Identifier: MIT
#include "dist/comm.h"

#include <cstdlib>
#include <memory>

#include "dist/comm_mpi.h"

namespace nt::dist {

namespace {

// Launchers say so in the environment: OpenMPI's mpirun, PMIx-based launchers and Slurm's srun.
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (std::getenv(v)) return true;
  return false;
}

std::unique_ptr<Comm>& world_ptr() {
  static std::unique_ptr<Comm> w;
  return w;
}

}  // namespace

Comm& world() {
  auto& w = world_ptr();
  if (!w) {
    if (built_with_mpi() && launched_by_mpi()) w = make_mpi_comm();
    if (!w) w = std::make_unique<SingleComm>();
  }
  return *w;
}

void finalize() {
  auto& w = world_ptr();
  if (w && std::string(w->kind()) == "mpi") finalize_mpi(*w);
  w.reset();
}

void abort_job(int code) {
  auto& w = world_ptr();
  if (w && w->size() > 1) abort_mpi(code);
}

void broadcast_string(Comm& c, std::string& s, int root) {
  uint64_t n = s.size();
  c.broadcast(&n, sizeof n, root);
  s.resize(size_t(n));
  c.broadcast(s.data(), s.size(), root);
}

}  // namespace nt::dist

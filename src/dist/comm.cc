// SPDX-License-Identifier: MIT
#include "dist/comm.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "core/check.h"
#include "core/system.h"
#include "dist/comm_mpi.h"

namespace nt::dist {

namespace {

// Launchers say so in the environment: OpenMPI's mpirun, and PMIx or PMI (srun --mpi=pmix).
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

// The launch's process count where the launcher says it (0 where it does not).
long launch_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* s = std::getenv(v)) return std::strtol(s, nullptr, 10);
  return 0;
}

std::unique_ptr<Comm>& world_ptr() {
  static std::unique_ptr<Comm> w;
  return w;
}

}  // namespace

Comm& world() {
  auto& w = world_ptr();
  if (!w) {
    // Several copies of a build without MPI would each train alone, into one folder.
    if (!built_with_mpi() && launch_size() > 1)
      fail("started as %ld processes, but this nanotrain was built without MPI (configure with -DNT_MPI=ON)",
           launch_size());
    if (built_with_mpi() && launched_by_mpi()) w = make_mpi_comm();
    if (!w) w = std::make_unique<SingleComm>();
  }
  return *w;
}

int launched_processes() { return int(std::max(1L, launch_size())); }

void run_alone() {
  auto& w = world_ptr();
  NT_CHECK(!w, "run_alone() after the job started");
  w = std::make_unique<SingleComm>();
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

void SingleComm::send(const void*, size_t, int to) { NT_CHECK(false, "send to rank %d in a single process", to); }
void SingleComm::recv(void*, size_t, int from) { NT_CHECK(false, "recv from rank %d in a single process", from); }

void broadcast_string(Comm& c, std::string& s, int root) {
  uint64_t n = s.size();
  c.broadcast(&n, sizeof n, root);
  s.resize(size_t(n));
  c.broadcast(s.data(), s.size(), root);
}

std::vector<std::string> rank_hosts(Comm& c) {
  std::vector<std::string> hosts(size_t(c.size()));
  for (int i = 0; i < c.size(); ++i) {
    if (i == c.rank()) hosts[size_t(i)] = hostname();
    broadcast_string(c, hosts[size_t(i)], i);
  }
  return hosts;
}

}  // namespace nt::dist

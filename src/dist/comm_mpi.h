// SPDX-License-Identifier: MIT
// The MPI job (comm_mpi.cc); in a build without MPI these are stubs (make_mpi_comm gives null).
#pragma once
#include <memory>

#include "dist/comm.h"

namespace nt::dist {

// Starts MPI (MPI_Init_thread) and returns the world communicator's Comm.
std::unique_ptr<Comm> make_mpi_comm();
// A barrier that does not spin, then MPI_Finalize.
void finalize_mpi(Comm& c);
void abort_mpi(int code);

}  // namespace nt::dist

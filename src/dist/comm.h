// SPDX-License-Identifier: MIT
// The processes of one job and what they say to each other. world() is the job this process
// belongs to: one process on its own, or, in a build with MPI started by mpirun or srun, every
// rank of the launch. Collectives are called by every rank in the same order. None waits
// forever: a rank that gets no answer within the time-out (NANOTRAIN_COMM_TIMEOUT seconds,
// default 1800) fails naming itself, and an error on any rank ends the whole job (abort_job).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nt::dist {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank's place among the ranks on its own machine (threads and cores are shared by them).
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  // x = the sum of every rank's x, added in rank order ((x0 + x1) + x2 ...), the same bits on
  // every rank: N ranks each holding one part of a sum reproduce one process adding the parts.
  virtual void allreduce_sum(float* x, size_t n) = 0;
  virtual void allreduce_sum(double* x, size_t n) = 0;
  // Sums started now and finished later, so that a layer's gradient is summed while the
  // backward computes the layers below it. Each is the sum of every rank's x, added in rank order
  // as allreduce_sum adds, delivered to rank `to` alone (the others' x are left holding partial
  // sums); x stays untouched by the caller until finish_sums. Every rank starts the same sums in
  // the same order and calls nothing else of this Comm before finish_sums.
  virtual void start_sum_to(float* x, size_t n, int to) = 0;
  // Moves the started sums on without waiting: called between pieces of the backward.
  virtual void poll_sums() = 0;
  // Waits until every started sum has arrived.
  virtual void finish_sums() = 0;
  // `bytes` of rank `root` copied to every rank.
  virtual void broadcast(void* bytes, size_t n, int root = 0) = 0;
  virtual void barrier() = 0;
  // Point to point: `n` bytes of this rank sent to rank `to`, which receives them from rank
  // `from` with a matching recv; messages between two ranks arrive in the order they were sent.
  virtual void send(const void* bytes, size_t n, int to) = 0;
  virtual void recv(void* bytes, size_t n, int from) = 0;
  // "single" or "mpi".
  virtual const char* kind() const = 0;
  // Wall seconds this rank has spent inside the calls above (sending, receiving and waiting for
  // the others), since the job started: what communication costs it.
  double busy_seconds() const { return busy_seconds_; }

 protected:
  double busy_seconds_ = 0;
};

// The job; the first call starts MPI where this build has it and a launcher started the process.
Comm& world();
// How many processes the launcher (mpirun, srun) started; 1 when none did.
int launched_processes();
// Makes this process a job of its own even when a launcher started several (a sweep's ranks each
// train their own runs, one run per host): world() is then a single process and MPI never starts.
// Called before the first world().
void run_alone();
// Ends MPI cleanly after every rank has arrived (a no-op in a single process).
void finalize();
// Ends every rank of the job at once with `code` (after an error on this rank); returns only in
// a single process.
void abort_job(int code);
// True where this build can talk to other processes (built with MPI).
bool built_with_mpi();

// A string of `root` (any length) on every rank.
void broadcast_string(Comm& c, std::string& s, int root = 0);
// Every rank's host name, in rank order, on every rank (every rank calls it).
std::vector<std::string> rank_hosts(Comm& c);

// For tests and the single process: one rank, collectives that return their input.
class SingleComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  void allreduce_sum(float*, size_t) override {}
  void allreduce_sum(double*, size_t) override {}
  void start_sum_to(float*, size_t, int) override {}
  void poll_sums() override {}
  void finish_sums() override {}
  void broadcast(void*, size_t, int) override {}
  void barrier() override {}
  // A single process has no one to talk to: calling these is a bug.
  void send(const void*, size_t, int to) override;
  void recv(void*, size_t, int from) override;
  const char* kind() const override { return "single"; }
};

}  // namespace nt::dist

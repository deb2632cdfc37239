// SPDX-License-Identifier: MIT
// Comm over MPI. Every collective is a non-blocking MPI call polled with a deadline, so that a
// rank that stopped answering turns into an error naming this rank instead of a hang; MPI's own
// errors come back as codes (MPI_ERRORS_RETURN) and become nt::Error the same way. The sum runs
// as a chain in rank order, so its rounding is fixed (and equal to one process adding the ranks'
// parts in turn), then the last rank broadcasts it.
#include "dist/comm_mpi.h"

#if NT_HAVE_MPI
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/check.h"

namespace nt::dist {

namespace {

using Clock = std::chrono::steady_clock;

// Seconds a rank waits for the others in one collective (rank 0 evaluating alone while the
// others wait for the next step counts too, hence the generous default).
double comm_timeout() {
  const char* s = std::getenv("NANOTRAIN_COMM_TIMEOUT");
  if (!s) return 1800;
  char* end = nullptr;
  const double t = std::strtod(s, &end);
  if (end == s || *end != '\0' || !(t > 0)) fail("NANOTRAIN_COMM_TIMEOUT=%s: must be a number of seconds > 0", s);
  return t;
}

// Chunks keep each message's count within MPI's int and let the chain pipeline.
constexpr size_t kChunkElems = size_t(1) << 20;
constexpr size_t kChunkBytes = size_t(1) << 30;
// Point-to-point messages use a tag of their own, apart from the sum's chunk tags.
constexpr int kPointTag = 30001;

class MpiComm final : public Comm {
 public:
  MpiComm() {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm local;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
    timeout_ = comm_timeout();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  const char* kind() const override { return "mpi"; }

  void allreduce_sum(float* x, size_t n) override {
    Busy busy(*this);
    chain_sum(x, n, MPI_FLOAT);
  }
  void allreduce_sum(double* x, size_t n) override {
    Busy busy(*this);
    chain_sum(x, n, MPI_DOUBLE);
  }
  void sum_to_last(float* x, size_t n) override {
    Busy busy(*this);
    chain_sum(x, n, MPI_FLOAT, false);
  }

  void send(const void* bytes, size_t n, int to) override {
    Busy busy(*this);
    const auto* p = static_cast<const char*>(bytes);
    for (size_t at = 0; at < n; at += kChunkBytes) {
      MPI_Request req;
      check(MPI_Isend(p + at, int(std::min(kChunkBytes, n - at)), MPI_BYTE, to, kPointTag, comm_, &req), "send");
      wait(req, "send", timeout_);
    }
  }

  void recv(void* bytes, size_t n, int from) override {
    Busy busy(*this);
    auto* p = static_cast<char*>(bytes);
    for (size_t at = 0; at < n; at += kChunkBytes) {
      MPI_Request req;
      check(MPI_Irecv(p + at, int(std::min(kChunkBytes, n - at)), MPI_BYTE, from, kPointTag, comm_, &req), "receive");
      wait(req, "receive", timeout_);
    }
  }

  void broadcast(void* bytes, size_t n, int root) override {
    Busy busy(*this);
    auto* p = static_cast<char*>(bytes);
    for (size_t at = 0; at < n || (n == 0 && at == 0); at += kChunkBytes) {
      const int count = int(std::min(kChunkBytes, n - at));
      MPI_Request req;
      check(MPI_Ibcast(p + at, count, MPI_BYTE, root, comm_, &req), "broadcast");
      wait(req, "broadcast", timeout_);
      if (n == 0) break;
    }
  }

  void barrier() override {
    Busy busy(*this);
    barrier_within(timeout_);
  }

  // A barrier that sleeps between polls; `seconds` <= 0 waits without a deadline.
  void barrier_within(double seconds) {
    MPI_Request req;
    check(MPI_Ibarrier(comm_, &req), "barrier");
    wait(req, "barrier", seconds);
  }

  ~MpiComm() override {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    MPI_Finalize();
  }

 private:
  // Adds the wall time of one call to busy_seconds_.
  class Busy {
   public:
    explicit Busy(MpiComm& c) : c_(c), t0_(Clock::now()) {}
    ~Busy() { c_.busy_seconds_ += std::chrono::duration<double>(Clock::now() - t0_).count(); }

   private:
    MpiComm& c_;
    Clock::time_point t0_;
  };

  void check(int rc, const char* what) const {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fail("rank %d of %d: %s: %.*s", rank_, size_, what, len, msg);
  }

  // Polls `req` (spinning briefly, then sleeping so a waiting rank leaves its core to others).
  void wait(MPI_Request& req, const char* what, double seconds) const {
    const auto t0 = Clock::now();
    for (int polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      if (polls > 2000) std::this_thread::sleep_for(std::chrono::microseconds(polls > 20000 ? 1000 : 50));
      if (seconds > 0 && std::chrono::duration<double>(Clock::now() - t0).count() > seconds)
        fail("rank %d of %d: %s: no answer from the other ranks in %.0f s (NANOTRAIN_COMM_TIMEOUT); one of them "
             "has stopped or hangs",
             rank_, size_, what, seconds);
    }
  }

  // Rank r receives the sum of ranks 0..r-1, adds its own part after it and passes it on; the
  // last rank then broadcasts the total (unless `share` is false). Chunk by chunk, so the ranks
  // work on different chunks at once.
  template <typename T>
  void chain_sum(T* x, size_t n, MPI_Datatype type, bool share = true) {
    if (size_ == 1) return;
    std::vector<T> in(std::min(n, kChunkElems));
    for (size_t at = 0; at < n; at += kChunkElems) {
      const size_t m = std::min(kChunkElems, n - at);
      const int tag = int((at / kChunkElems) % 30000);
      if (rank_ > 0) {
        MPI_Request req;
        check(MPI_Irecv(in.data(), int(m), type, rank_ - 1, tag, comm_, &req), "gradient sum (receive)");
        wait(req, "gradient sum (receive)", timeout_);
        for (size_t i = 0; i < m; ++i) x[at + i] = in[i] + x[at + i];
      }
      if (rank_ < size_ - 1) {
        MPI_Request req;
        check(MPI_Isend(x + at, int(m), type, rank_ + 1, tag, comm_, &req), "gradient sum (send)");
        wait(req, "gradient sum (send)", timeout_);
      }
    }
    for (size_t at = 0; share && at < n; at += kChunkElems) {
      MPI_Request req;
      check(MPI_Ibcast(x + at, int(std::min(kChunkElems, n - at)), type, size_ - 1, comm_, &req), "gradient sum");
      wait(req, "gradient sum (broadcast)", timeout_);
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  double timeout_ = 0;
};

}  // namespace

bool built_with_mpi() { return true; }

std::unique_ptr<Comm> make_mpi_comm() { return std::make_unique<MpiComm>(); }

void finalize_mpi(Comm& c) {
  // Ranks that finish first wait here, asleep, while rank 0 writes the run's last files.
  static_cast<MpiComm&>(c).barrier_within(0);
}

void abort_mpi(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

}  // namespace nt::dist

#else  // a build without MPI

namespace nt::dist {

bool built_with_mpi() { return false; }
std::unique_ptr<Comm> make_mpi_comm() { return nullptr; }
void finalize_mpi(Comm&) {}
void abort_mpi(int) {}

}  // namespace nt::dist

#endif

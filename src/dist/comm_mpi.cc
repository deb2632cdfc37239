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
#include <cstdint>
#include <cstdlib>
#include <deque>
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
// Point-to-point messages use a tag of their own, apart from the sum's chunk tags; the started
// sums (start_sum_to) take the tags above it, in turn.
constexpr int kPointTag = 30001;
constexpr int kSumTagFirst = 30002, kSumTags = 2700;
// Floats a rank holds at most in receive buffers of started sums.
constexpr size_t kStagedElems = size_t(8) << 20;

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
  void start_sum_to(float* x, size_t n, int to) override {
    if (size_ == 1) return;
    Busy busy(*this);
    for (size_t at = 0; at < n; at += kChunkElems) {
      SumJob j;
      j.x = x + at, j.n = std::min(kChunkElems, n - at), j.to = to;
      j.tag = kSumTagFirst + int(sums_started_++ % kSumTags);
      sums_.push_back(std::move(j));
    }
    advance_sums();
  }

  void poll_sums() override {
    if (sums_.empty()) return;
    Busy busy(*this);
    advance_sums();
  }

  void finish_sums() override {
    if (sums_.empty()) return;
    Busy busy(*this);
    auto t0 = Clock::now();
    for (int polls = 0;; ++polls) {
      const size_t left = advance_sums();
      if (left == 0) break;
      if (left < sums_left_) sums_left_ = left, t0 = Clock::now(), polls = 0;  // progress: a new deadline
      if (polls > 2000) std::this_thread::sleep_for(std::chrono::microseconds(polls > 20000 ? 1000 : 50));
      if (std::chrono::duration<double>(Clock::now() - t0).count() > timeout_)
        fail("rank %d of %d: gradient sum: no answer from the other ranks in %.0f s (NANOTRAIN_COMM_TIMEOUT); one "
             "of them has stopped or hangs",
             rank_, size_, timeout_);
    }
    sums_.clear();
    sums_left_ = SIZE_MAX, staged_ = 0;
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
  // last rank then broadcasts the total. Chunk by chunk, so the ranks
  // work on different chunks at once.
  template <typename T>
  void chain_sum(T* x, size_t n, MPI_Datatype type) {
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
    for (size_t at = 0; at < n; at += kChunkElems) {
      MPI_Request req;
      check(MPI_Ibcast(x + at, int(std::min(kChunkElems, n - at)), type, size_ - 1, comm_, &req), "gradient sum");
      wait(req, "gradient sum (broadcast)", timeout_);
    }
  }

  // One chunk of a started sum, moved on by advance_sums. Along the chain: rank r > 0 receives
  // ranks 0..r-1's sum into `in` and adds its own x after it; ranks before the last pass x on to
  // r + 1; the last rank sends the total to `to`, whose x receives it once its own send is done.
  struct SumJob {
    enum Stage { kNew, kReceiving, kSending, kReceivingTotal, kSendingTotal, kDone };
    float* x = nullptr;
    size_t n = 0;
    int to = 0, tag = 0;
    Stage stage = kNew;
    MPI_Request req = MPI_REQUEST_NULL;
    std::vector<float> in;
  };

  bool done(SumJob& j, const char* what) {
    int flag = 0;
    check(MPI_Test(&j.req, &flag, MPI_STATUS_IGNORE), what);
    return flag != 0;
  }

  void send_on(SumJob& j, int to, SumJob::Stage next) {
    check(MPI_Isend(j.x, int(j.n), MPI_FLOAT, to, j.tag, comm_, &j.req), "gradient sum (send)");
    j.stage = next;
  }

  // Moves each job as far as it can go without waiting; returns the jobs not yet done. Receives
  // into `in` start in job order while fewer than kStagedElems floats are staged (one job at
  // least), which bounds the memory of a sum started long before the previous rank sends.
  size_t advance_sums() {
    const int last = size_ - 1;
    size_t left = 0;
    bool may_stage = true;
    for (SumJob& j : sums_) {
      if (j.stage == SumJob::kNew) {
        if (rank_ == 0) {
          send_on(j, 1, SumJob::kSending);
        } else if (may_stage && (staged_ == 0 || staged_ + j.n <= kStagedElems)) {
          j.in.resize(j.n);
          staged_ += j.n;
          check(MPI_Irecv(j.in.data(), int(j.n), MPI_FLOAT, rank_ - 1, j.tag, comm_, &j.req),
                "gradient sum (receive)");
          j.stage = SumJob::kReceiving;
        } else {
          may_stage = false;  // the later jobs wait their turn
        }
      }
      if (j.stage == SumJob::kReceiving && done(j, "gradient sum (receive)")) {
        for (size_t i = 0; i < j.n; ++i) j.x[i] = j.in[i] + j.x[i];
        staged_ -= j.n;
        std::vector<float>().swap(j.in);
        if (rank_ < last) send_on(j, rank_ + 1, SumJob::kSending);
        else if (j.to != last) send_on(j, j.to, SumJob::kSendingTotal);
        else j.stage = SumJob::kDone;
      }
      if (j.stage == SumJob::kSending && done(j, "gradient sum (send)")) {
        if (rank_ == j.to) {
          check(MPI_Irecv(j.x, int(j.n), MPI_FLOAT, last, j.tag, comm_, &j.req), "gradient sum (receive)");
          j.stage = SumJob::kReceivingTotal;
        } else {
          j.stage = SumJob::kDone;
        }
      }
      if ((j.stage == SumJob::kReceivingTotal || j.stage == SumJob::kSendingTotal) && done(j, "gradient sum"))
        j.stage = SumJob::kDone;
      if (j.stage != SumJob::kDone) ++left;
    }
    return left;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  double timeout_ = 0;
  std::deque<SumJob> sums_;  // started, not yet finished (a deque: jobs never move)
  uint64_t sums_started_ = 0;
  size_t staged_ = 0, sums_left_ = SIZE_MAX;
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

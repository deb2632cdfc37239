// SPDX-License-Identifier: MIT
// An exception must not leave an OpenMP region (the process would terminate): work inside one runs
// through FirstError::run, which keeps the first exception, and the caller rethrows it after.
#pragma once
#include <exception>
#include <mutex>

namespace nt {

class FirstError {
 public:
  template <class F>
  void run(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
  bool failed() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bool(error_);
  }
  void rethrow() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
};

}  // namespace nt

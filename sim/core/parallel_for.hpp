// parallel_for(count, threads, job): runs job(0) ... job(count - 1) on up to `threads` threads (the
// caller's thread is one of them) and returns once every started job has finished.
//
// Contract:
//  - Jobs are handed out in index order, one at a time, to whichever thread is free; a job must not
//    depend on another job having run (their order in time is not fixed; only their results are).
//  - An exception thrown by a job is caught on its thread. From then on no further job is handed out;
//    the jobs already running finish; every thread is joined; then the exception of the lowest index
//    among the jobs that threw is rethrown in the caller. Because jobs start in index order, every job
//    below the first one that failed has been started, so that exception is the one a loop from 0 to
//    count - 1 would have thrown: which error the caller sees does not depend on the thread count or
//    on timing. No exception ever leaves a worker thread (which would call std::terminate).
//  - threads == 0 counts as 1; at most `count` threads run; count == 0 runs nothing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace dtsim::core {

template <typename Job>
void parallel_for(std::size_t count, std::size_t threads, Job&& job) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex lock;
  std::size_t failed_index = count;  // lowest index that threw, under `lock`
  std::exception_ptr failure;
  const auto worker = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      const std::size_t i = next.fetch_add(1);
      if (i >= count) return;
      try {
        job(i);
      } catch (...) {
        const std::lock_guard<std::mutex> guard(lock);
        if (i < failed_index) {
          failed_index = i;
          failure = std::current_exception();
        }
        failed.store(true, std::memory_order_relaxed);
      }
    }
  };
  const std::size_t n = std::min(std::max<std::size_t>(threads, 1), count);
  std::vector<std::thread> pool;
  pool.reserve(n > 0 ? n - 1 : 0);
  try {
    for (std::size_t t = 1; t < n; ++t) pool.emplace_back(worker);
  } catch (...) {  // a thread could not be started: stop handing out jobs, join those that run
    failed.store(true);
    for (std::thread& t : pool) t.join();
    throw;
  }
  if (n > 0) worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace dtsim::core

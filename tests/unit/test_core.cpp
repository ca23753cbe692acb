// core/: the worker pool (parallel_for.hpp).
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "core/errors.hpp"
#include "core/parallel_for.hpp"

TEST_CASE("parallel_for runs every job once, on as many threads as asked") {
  for (const std::size_t threads : {1U, 2U, 7U}) {
    std::vector<std::atomic<int>> runs(100);
    dtsim::core::parallel_for(runs.size(), threads, [&](std::size_t i) { ++runs[i]; });
    for (const auto& r : runs) CHECK(r.load() == 1);
  }
  dtsim::core::parallel_for(0, 4, [](std::size_t) { FAIL("no job to run"); });
}

TEST_CASE("parallel_for: jobs that throw on several threads; the lowest index's error reaches the caller") {
  // Jobs 3, 5 and 40 throw (40 never starts on one thread: the pool stops handing out jobs after the
  // first error). Jobs are handed out in index order, so job 3 always starts, and its error is the one
  // rethrown whatever the thread count and timing: "job 3". Job 5 sleeps first so that, with several
  // threads, later jobs are running on other threads when the errors come.
  for (const std::size_t threads : {1U, 2U, 4U, 8U}) {
    INFO("threads: ", threads);
    std::atomic<int> started{0};
    const auto job = [&](std::size_t i) {
      ++started;
      if (i == 5) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (i == 3 || i == 5 || i == 40) throw dtsim::core::InternalError("job " + std::to_string(i));
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    };
    try {
      dtsim::core::parallel_for(1000, threads, job);
      FAIL("no exception");
    } catch (const dtsim::core::InternalError& e) {
      CHECK(std::string(e.what()) == "job 3");
    }
    // At most one job per thread starts after the error was seen: far fewer than 1000.
    CHECK(started.load() < 100);
  }
  // The exception's type survives: an InputError stays an InputError (exit status 2, not 1).
  CHECK_THROWS_AS(dtsim::core::parallel_for(10, 3,
                                            [](std::size_t i) {
                                              if (i >= 2) throw dtsim::core::InputError("f", "/p", "bad");
                                            }),
                  dtsim::core::InputError);
}

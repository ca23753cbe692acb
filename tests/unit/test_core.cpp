// core/: the worker pool (parallel_for.hpp) and the files written whole or not at all (atomic_files.hpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "cli_fixture.hpp"
#include "core/atomic_files.hpp"
#include "core/errors.hpp"
#include "core/parallel_for.hpp"

namespace {

namespace fs = std::filesystem;
using dtsim::testing::scratch_dir;

// A file's bytes.
std::string slurp(const fs::path& path) { return dtsim::testing::read_file(path); }

}  // namespace

TEST_CASE("parallel_for runs every job once, on as many threads as asked") {
  for (const std::size_t threads : {1U, 2U, 7U}) {
    std::vector<std::atomic<int>> runs(100);
    dtsim::core::parallel_for(runs.size(), threads, [&](std::size_t i) { ++runs[i]; });
    for (const auto& r : runs) CHECK(r.load() == 1);
  }
  dtsim::core::parallel_for(0, 4, [](std::size_t) { FAIL("no job to run"); });
}

TEST_CASE("parallel_for: jobs that throw on several threads - the lowest index's error reaches the caller") {
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

TEST_CASE("write_files replaces files whole, keeps permissions, and leaves nothing behind on failure") {
  const fs::path dir = scratch_dir("core_atomic");
  const fs::path a = dir / "a.txt";
  const fs::path b = dir / "b.txt";
  dtsim::core::write_files({{a.string(), "first\n"}});
  CHECK(slurp(a) == "first\n");
  ::chmod(a.c_str(), 0640);
  dtsim::core::write_files({{a.string(), "second\n"}, {b.string(), "b\n"}});
  CHECK(slurp(a) == "second\n");
  CHECK(slurp(b) == "b\n");
  struct stat st {};
  REQUIRE(::stat(a.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  // One path in a missing folder: bad input, and neither file changes nor any temporary remains.
  CHECK_THROWS_AS(dtsim::core::write_files({{a.string(), "third\n"}, {(dir / "no" / "c.txt").string(), "c"}}),
                  dtsim::core::InputError);
  CHECK(slurp(a) == "second\n");
  // A link is followed: the file it points to is replaced, the link stays.
  const fs::path link = dir / "link.txt";
  fs::create_symlink(b, link);
  dtsim::core::write_file(link.string(), "via link\n");
  CHECK(fs::is_symlink(link));
  CHECK(slurp(b) == "via link\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  CHECK(entries == 3);  // a.txt, b.txt, link.txt: no temporary left
  fs::remove_all(dir);
}

TEST_CASE("a device is written in place and its write errors are errors") {
  CHECK(dtsim::core::written_in_place("/dev/null"));
  CHECK(dtsim::core::written_in_place("/dev/stdout"));
  CHECK_FALSE(dtsim::core::written_in_place((fs::temp_directory_path() / "x.json").string()));
  dtsim::core::write_file("/dev/null", "discarded");
  // /dev/full accepts the open and refuses every write with ENOSPC.
  try {
    dtsim::core::write_file("/dev/full", "lost");
    FAIL("no error");
  } catch (const dtsim::core::OutputError& e) {
    CHECK(std::string(e.what()).find("cannot write /dev/full: No space left on device") == 0);
  }
}

#include "cli/calibrate_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "cli/positive_number.hpp"
#include "config/profile_loader.hpp"
#include "core/errors.hpp"

namespace dtsim::cli {

namespace {

namespace fs = std::filesystem;

#ifdef DTSIM_HAVE_CPU_CALIBRATION
constexpr bool kHaveCpu = true;
#else
constexpr bool kHaveCpu = false;
#endif
#ifdef DTSIM_HAVE_CUDA_CALIBRATION
constexpr bool kHaveCuda = true;
#else
constexpr bool kHaveCuda = false;
#endif

fs::path harness_path(const char* name) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path path = ec ? fs::path(name) : self.parent_path() / name;
  if (!fs::exists(path, ec)) {
    throw core::InputError("command line", "/backend",
                           fmt::format("the calibration harness {} is not next to the dtsim executable ({})",
                                       name, path.string()));
  }
  return path;
}

// The NVIDIA GPUs of this node: its /dev/nvidiaN device files.
int nvidia_devices() {
  int gpus = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/dev", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
        name.find_first_not_of("0123456789", 6) == std::string::npos)
      ++gpus;
  }
  return gpus;
}

// Single-quoted for the shell.
std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string harness_args(const CalibrateOptions& o) {
  std::string args = " --out " + quoted(o.out_dir);
  if (!o.id.empty()) args += " --id " + quoted(o.id);
  if (o.quick) args += " --quick";
  return args;
}

}  // namespace

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& o) {
  CLI::App* cmd = app.add_subcommand("calibrate", "Measure this machine and write hardware profiles");
  cmd->add_option("--backend", o.backend,
                  "cpu (OpenBLAS + MPI) or cuda (cuBLASLt + NCCL); default: cuda if built")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--out", o.out_dir, "Profile folder to write (gpus/, nodes/, logs/ under it)")->required();
  cmd->add_option("--id", o.id, "Id of the written profiles (default: derived from the host name)");
  cmd->add_flag("--quick", o.quick, "A minute-scale subset of the sweeps");
  cmd->add_option("--ranks", o.ranks,
                  "MPI ranks, the devices of the calibrated node (cpu: 2; cuda: one per GPU)")
      ->check(positive_number())
      ->each([&o](const std::string&) { o.ranks_given = true; });
  cmd->add_option("--mpirun", o.mpirun, "cpu backend: MPI launcher command");
  return cmd;
}

int calibrate_command(const CalibrateOptions& o, std::ostream& out, std::ostream& err) {
  const int gpus = nvidia_devices();
  const std::string backend = o.backend.empty() ? (kHaveCuda && gpus > 0 ? "cuda" : "cpu") : o.backend;
  std::string command;
  if (backend == "cpu") {
    if (!kHaveCpu) {
      throw core::InputError(
          "command line", "/backend",
          "got \"cpu\"; this dtsim was built without the CPU harness (needs OpenBLAS and Open MPI: "
          "libopenblas-dev, libopenmpi-dev, openmpi-bin)");
    }
    // Ranks share the cores; each runs BLAS on one thread. Open MPI refuses root without the flag.
    command = fmt::format("{} --oversubscribe{} -np {} -x OPENBLAS_NUM_THREADS=1 {}{}", o.mpirun,
                          geteuid() == 0 ? " --allow-run-as-root" : "", o.ranks,
                          quoted(harness_path("dtsim_calibrate_cpu").string()), harness_args(o));
  } else {
    if (!kHaveCuda) {
      throw core::InputError(
          "command line", "/backend",
          "got \"cuda\"; this dtsim was built without the CUDA harness (CUDA toolkit with cuBLASLt "
          "and NCCL not found at configure time, or DTSIM_WITH_CUDA=OFF)");
    }
    if (gpus == 0) {
      throw core::InputError(
          "command line", "/backend",
          "got \"cuda\"; this machine has no NVIDIA GPU (no /dev/nvidiaN device file): run "
          "it on a GPU node, or calibrate the CPU with --backend cpu");
    }
    // One rank per GPU of this node, unless --ranks was given.
    const int ranks = o.ranks_given ? o.ranks : gpus;
    command = fmt::format("{} --oversubscribe{} -np {} {}{}", o.mpirun,
                          geteuid() == 0 ? " --allow-run-as-root" : "", ranks,
                          quoted(harness_path("dtsim_calibrate_cuda").string()), harness_args(o));
  }
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec)
    throw core::InputError(o.out_dir, "", fmt::format("cannot create the profile folder: {}", ec.message()));
  out << "running: " << command << "\n" << std::flush;
  const int status = std::system(command.c_str());
  if (status != 0) {
    err << fmt::format("error: the {} calibration harness failed (status {}): {}\n", backend, status,
                       command);
    return kExitInternal;
  }
  // Read the profiles back strictly: what was written must be usable by scenarios.
  int loaded = 0;
  for (const char* kind : {"gpus", "nodes"}) {
    const fs::path folder = fs::path(o.out_dir) / kind;
    if (!fs::is_directory(folder, ec)) continue;
    for (const auto& id : config::list_ids(folder.string())) {
      const config::IdLocation where{"command line", "/out"};
      if (std::string(kind) == "gpus") {
        const config::GpuProfile gpu = config::load_gpu_profile(o.out_dir, id, where);
        out << fmt::format("gpus/{}.json: {}\n", id, gpu.name);
        ++loaded;
      } else {
        const config::NodeProfile node = config::load_node_profile(o.out_dir, id, where);
        out << fmt::format(
            "nodes/{}.json: {} devices of {}; scenarios use it as \"cluster\": {{\"node\": \"{}\"}} "
            "once the files are under hardware_profiles/ (or DTSIM_DATA_DIR points above them)\n",
            id, node.gpus_per_node, node.gpu, id);
      }
    }
  }
  if (loaded == 0) {
    err << fmt::format("error: the {} harness wrote no profile under {}\n", backend, o.out_dir);
    return kExitInternal;
  }
  return kExitOk;
}

}  // namespace dtsim::cli

// dtsim_calibrate_cpu: the CPU backend of dtsim calibrate, run under mpirun (every rank is one
// "device" of a node). Every rank runs the GEMM sweep (OpenBLAS; shapes interleaved round by round),
// the memory kernels and the call overhead at the same time, as the ranks of a training job do; then all
// ranks run the collective sweep. Rank 0 fits and writes, under --out: gpus/ID.json (the CPU "device" of one
// rank), nodes/ID.json (a node of `ranks` such devices, its intra-node link fitted to the all-reduce sweep)
// and logs/ID-*.log (the collective sweeps in nccl-tests format).
//
//   mpirun -np 2 dtsim_calibrate_cpu --out PROFILE_DIR [--id ID] [--quick] [--threads T]
#include <cblas.h>
#include <mpi.h>

#include <chrono>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "calibration/cpu/cpu_kernels.hpp"
#include "calibration/cpu/mpi_collectives.hpp"
#include "calibration/device_profile.hpp"
#include "calibration/fit_network.hpp"
#include "calibration/harness_env.hpp"
#include "calibration/mpi_main.hpp"
#include "calibration/nccl_log.hpp"
#include "core/errors.hpp"
#include "reports/profile_json.hpp"

namespace {

namespace cal = dtsim::calibration;
namespace cpu = dtsim::calibration::cpu;

struct Options : cal::HarnessOptions {
  int threads = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (cal::take_harness_option(o, argc, argv, i)) continue;
    if (std::string(argv[i]) != "--threads") throw cal::unknown_argument(argv[i]);
    o.threads = std::stoi(cal::option_value(argc, argv, i));
  }
  cal::require_out(o);
  if (o.threads < 1) throw dtsim::core::InputError("command line", "", "--threads must be at least 1");
  return o;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

std::string mpi_version() {
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> buf{};
  int len = 0;
  MPI_Get_library_version(buf.data(), &len);
  std::string v(buf.data(), static_cast<std::size_t>(len));
  const auto comma = v.find(',');
  return comma == std::string::npos ? v : v.substr(0, comma);
}

int run(int argc, char** argv) {
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const Options o = parse(argc, argv);
  const std::string id = o.id.empty() ? "cpu-" + cal::host_name() : o.id;
  openblas_set_num_threads(o.threads);
  const int repeats = o.quick ? 7 : 15;

  std::vector<std::int64_t> ms{128, 512};
  std::vector<std::int64_t> ns{256, 1024};
  std::vector<std::int64_t> ks{128, 512, 1024};
  if (!o.quick) {
    ms = {32, 128, 512, 2048};
    ns = {128, 512, 1024, 2048};
    ks = {64, 128, 512, 1024, 2048};
  }
  std::vector<cpu::GemmShape3> shapes;
  for (auto mm : ms) {
    for (auto nn : ns) {
      for (auto kk : ks) shapes.push_back({mm, nn, kk});
    }
  }
  cal::DeviceMeasurements m;
  MPI_Barrier(MPI_COMM_WORLD);
  m.gemms = cpu::time_sgemm_sweep(shapes, repeats, o.quick ? 0.01 : 0.03);
  MPI_Barrier(MPI_COMM_WORLD);
  m.memory = cpu::time_memory(o.quick ? (4 << 20) : (16 << 20), repeats);
  m.launch_seconds = cpu::time_call_overhead(repeats);

  std::vector<double> sizes;
  for (double s = o.quick ? 16384 : 4096; s <= (o.quick ? (8 << 20) : (128 << 20)); s *= o.quick ? 4 : 2)
    sizes.push_back(s);
  const std::vector<cpu::MpiCollective> kinds{cpu::MpiCollective::all_reduce, cpu::MpiCollective::all_gather,
                                              cpu::MpiCollective::reduce_scatter};
  std::vector<std::vector<cal::CollectiveTiming>> timings;
  for (auto kind : kinds) timings.push_back(cpu::time_collective(MPI_COMM_WORLD, kind, sizes, repeats));
  if (rank != 0) return 0;

  const std::filesystem::path out(o.out);
  std::vector<std::string> logs;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const auto path = out / "logs" / fmt::format("{}-{}.log", id, cal::program_name(cpu::name_of(kinds[i])));
    cal::write_output_file(
        path, cal::nccl_tests_log(cpu::name_of(kinds[i]), ranks, "dtsim_calibrate_cpu (MPI)", timings[i]));
    logs.push_back(path.string());
  }

  const std::string run =
      fmt::format("dtsim_calibrate_cpu{} ({} ranks x {} OpenBLAS thread(s); {}; {}) on {} ({}), {}",
                  o.quick ? " --quick" : "", ranks, o.threads, openblas_get_config(), mpi_version(),
                  cal::host_name(), cpu_model(), cal::utc_now());
  m.id = id;
  m.name = fmt::format("{} ({} thread(s) per rank)", cpu_model(), o.threads);
  m.run = run;
  m.memory_bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  m.sm_count = o.threads;
  m.tile_m = 16;
  m.tile_n = 16;
  m.main_precision = dtsim::config::Precision::fp32;
  const cal::DeviceProfile device = cal::device_profile(m);
  cal::write_profile_json(out / "gpus" / (id + ".json"),
                          dtsim::reports::gpu_profile_json(device.gpu, device.sources));

  dtsim::config::NodeProfile node;
  node.id = id;
  node.name = fmt::format("{} ranks of {} on one host (MPI shared memory)", ranks, cpu_model());
  node.gpu = id;
  node.gpus_per_node = ranks;
  node.intra_kind = dtsim::config::IntraNodeKind::shared_memory;
  // Intra-node link: the all-reduce sweep, fitted with the ring equations of fit_network.hpp.
  const cal::LinkFit fit = cal::fit_intra_node_link(node, logs[0], timings[0], ranks, 0.0);
  node.fabric = "tcp";
  node.nic_gbps = 10.0;
  node.nics_per_node = 1;
  node.host_memory_bytes = m.memory_bytes;
  const dtsim::reports::Sources sources{
      {"gpu", "the CPU device profile written by the same run"},
      {"gpus_per_node", fmt::format("MPI ranks of the run: {}", run)},
      {"intra_node",
       fmt::format(
           "gbytes_per_s and latency_us fitted by dtsim_calibrate_cpu to its MPI_Allreduce sweep ({}; ring: "
           "t = 2(n-1) latency + 2(n-1)/n S / bandwidth, weighted least squares on relative time, fit error "
           "{:.1f}% over {} sizes), efficiency 1 as the fitted bandwidth is already achieved; bandwidth "
           "p10/p90: throughput at the 10th/90th percentile of the repeats over the median (median over "
           "sizes); measured by {}",
           logs[0], fit.fit.mape, fit.fit.rows, run)},
      {"network",
       "not measured: a single-host calibration has no network; fabric tcp (shipped profile), and 1 x 10 "
       "Gb/s is a "
       "placeholder to replace with the NIC of the machines before using this node in multi-node scenarios"},
      {"host_memory_bytes", fmt::format("physical memory reported by the host to {}", run)}};
  cal::write_profile_json(out / "nodes" / (id + ".json"), dtsim::reports::node_profile_json(node, sources));

  std::cout << fmt::format(
      "dtsim_calibrate_cpu: {} GEMM shapes (peak {:.1f} GFLOP/s fp32, fit error {:.1f}%), memory {:.1f} "
      "GB/s, "
      "all-reduce {:.2f} GB/s + {:.1f} us per step; wrote {}/gpus/{}.json and {}/nodes/{}.json\n",
      m.gemms.size(), *device.gpu.peak_tflops[0] * 1e3, device.fits[0]->mape_percent,
      device.gpu.hbm_bandwidth_gbytes_per_s, node.intra_gbytes_per_s, node.intra_latency_us, o.out, id, o.out,
      id);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return dtsim::calibration::mpi_main("dtsim_calibrate_cpu", argc, argv, run);
}

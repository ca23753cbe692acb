// dtsim_calibrate_cuda: the CUDA backend of dtsim calibrate, one MPI rank per GPU (mpirun or srun; a
// single process measures its GPU only). Every rank measures its GPU at the same time: cuBLASLt GEMMs
// over the precisions it supports on a shape grid, plus, in the training precisions (fp16, bf16, fp8;
// --quick: bf16 alone, tensor-parallel degree 8 alone), the GEMM shapes of the shipped model presets
// under tensor-parallel degrees 1, 2, 4 and 8 (micro-batch 1); HBM copy and triad, and the cost of a
// tiny GEMM call. Then all ranks run the NCCL sweep (collective_log.hpp). Rank 0 writes, under --out:
//   gpus/ID.json                       the GPU profile (device_profile.hpp), with the run's metadata
//   logs/ID-<collective>_perf.log      the NCCL sweeps in nccl-tests format
//   nodes/ID.json                      when all ranks share one host: the node, its intra-node link
//                                      fitted to the all-reduce sweep (fit_network.hpp)
// Across hosts, the all-reduce log is what `dtsim import nccl-tests` fits a fabric profile to.
//
//   mpirun -np GPUS dtsim_calibrate_cuda --out PROFILE_DIR [--id ID] [--quick] [--intra-kind K]
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <nccl.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "calibration/collective_log.hpp"
#include "calibration/cuda/cublaslt_gemm.hpp"
#include "calibration/cuda/cuda_check.hpp"
#include "calibration/cuda/cuda_kernels.hpp"
#include "calibration/cuda/nccl_collectives.hpp"
#include "calibration/device_profile.hpp"
#include "calibration/fit_network.hpp"
#include "calibration/harness_env.hpp"
#include "calibration/mpi_main.hpp"
#include "calibration/nccl_log.hpp"
#include "config/profile_loader.hpp"
#include "config/scenario_loader.hpp"
#include "core/errors.hpp"
#include "models/transformer/layer_kinds.hpp"
#include "models/transformer/transformer.hpp"
#include "reports/profile_json.hpp"

namespace {

namespace cal = dtsim::calibration;
namespace cu = dtsim::calibration::cuda;
using dtsim::config::Precision;

struct Options : cal::HarnessOptions {
  std::string intra_kind = "nvswitch";
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (cal::take_harness_option(o, argc, argv, i)) continue;
    if (std::string(argv[i]) != "--intra-kind") throw cal::unknown_argument(argv[i]);
    o.intra_kind = cal::option_value(argc, argv, i);
  }
  cal::require_out(o);
  if (o.intra_kind != "nvswitch" && o.intra_kind != "nvlink" && o.intra_kind != "pcie")
    throw dtsim::core::InputError("command line", "/intra-kind", "expected nvswitch, nvlink or pcie");
  return o;
}

using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t>;

// GEMMs (unbatched) of one transformer block of each kind (models/transformer/layer_kinds.hpp) and the
// head of every shipped preset, micro-batch 1.
std::set<Shape> preset_shapes(const std::vector<std::int64_t>& tp_degrees) {
  std::set<Shape> shapes;
  const auto data = dtsim::config::default_data_paths();
  for (const auto& id : dtsim::config::list_ids(data.model_presets)) {
    const auto model = dtsim::config::load_model_preset(data.model_presets, id, {"presets", ""});
    for (std::int64_t tp : tp_degrees) {
      dtsim::models::ShardConfig shard;
      shard.tensor = tp;
      const dtsim::models::LayerKinds kinds(model);
      std::vector<dtsim::models::LayerProgram> programs;
      for (std::size_t k = 0; k < kinds.count(); ++k)
        programs.push_back(dtsim::models::transformer_layer(kinds.model(k), shard));
      programs.push_back(dtsim::models::head_layer(model, shard));
      for (const auto& program : programs) {
        for (const auto* ops : {&program.forward, &program.backward}) {
          for (const auto& op : *ops) {
            const auto& g = op.compute.gemm;
            if (op.compute.cls == dtsim::graph::ComputeClass::gemm && g.batch == 1 && g.m > 0)
              shapes.insert({g.m, g.n, g.k});
          }
        }
      }
    }
  }
  return shapes;
}

int distinct_hosts(MPI_Comm comm, int ranks) {
  std::array<char, 256> mine{};
  const std::string h = cal::host_name();
  std::copy_n(h.begin(), std::min(h.size(), mine.size() - 1), mine.begin());
  std::vector<char> all(mine.size() * static_cast<std::size_t>(ranks));
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, all.data(),
                static_cast<int>(mine.size()), MPI_CHAR, comm);
  std::set<std::string> hosts;
  for (int r = 0; r < ranks; ++r)
    hosts.insert(std::string(all.data() + static_cast<std::size_t>(r) * mine.size()));
  return static_cast<int>(hosts.size());
}

int run(int argc, char** argv) {
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const Options o = parse(argc, argv);
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int local_rank = 0;
  int local_ranks = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_ranks);
  int devices = 0;
  cu::check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices == 0) throw dtsim::core::InputError("command line", "", "no CUDA device is visible");
  cu::check(cudaSetDevice(local_rank % devices), "cudaSetDevice");
  cudaDeviceProp prop{};
  cu::check(cudaGetDeviceProperties(&prop, local_rank % devices), "cudaGetDeviceProperties");
  int driver = 0;
  int runtime = 0;
  int nccl_version = 0;
  cu::check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  cu::check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  cu::check(ncclGetVersion(&nccl_version), "ncclGetVersion");
  const std::string gpu_name = prop.name;
  const std::string id = o.id.empty() ? "cuda-" + cal::host_name() : o.id;
  const int repeats = o.quick ? 5 : 10;

  // GEMM sweep.
  cu::CublasLtGemm gemm;
  std::vector<std::int64_t> grid = o.quick ? std::vector<std::int64_t>{2048, 8192}
                                           : std::vector<std::int64_t>{1024, 2048, 4096, 8192, 16384};
  std::set<Shape> shapes;
  for (auto m : grid)
    for (auto n : grid)
      for (auto k : grid) shapes.insert({m, n, k});
  const std::set<Shape> presets =
      preset_shapes(o.quick ? std::vector<std::int64_t>{8} : std::vector<std::int64_t>{1, 2, 4, 8});
  if (rank == 0)
    std::cerr << fmt::format(
        "dtsim_calibrate_cuda: {} rank(s), {}: GEMMs over {} grid shapes and {} preset shapes, then HBM{}\n",
        ranks, gpu_name, shapes.size(), presets.size(), ranks > 1 ? " and NCCL" : "");
  cal::DeviceMeasurements m;
  std::string precisions;
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16, Precision::fp8}) {
    if (!gemm.device_supports(p)) continue;
    std::set<Shape> todo = shapes;
    // The presets' shapes in the precisions models train in: FP32 and TF32 GEMMs of the largest presets
    // take seconds each, and their curve is fitted to the grid alone.
    const bool training_precision =
        p == Precision::bf16 || (!o.quick && (p == Precision::fp16 || p == Precision::fp8));
    if (training_precision) todo.insert(presets.begin(), presets.end());
    int measured = 0;
    const double started = MPI_Wtime();
    for (const auto& [mm, nn, kk] : todo) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (auto run = gemm.time(mm, nn, kk, p, repeats, 0.005)) {
        m.gemms.push_back({mm, nn, kk, p, cal::sample_stats(run->seconds)});
        ++measured;
      }
    }
    if (rank == 0)
      std::cerr << fmt::format("dtsim_calibrate_cuda: {} GEMMs: {} of {} shapes measured in {:.1f} s\n",
                               dtsim::config::to_string(p), measured, todo.size(), MPI_Wtime() - started);
    if (measured > 0)
      precisions += fmt::format("{}{} ({} shapes)", precisions.empty() ? "" : ", ",
                                dtsim::config::to_string(p), measured);
  }
  if (auto tiny = gemm.time(8, 8, 8, Precision::fp32, repeats, 0.001))
    m.launch_seconds = cal::sample_stats(tiny->seconds);
  MPI_Barrier(MPI_COMM_WORLD);
  for (const auto& t : cu::time_hbm(std::size_t{1} << 28, repeats))
    m.memory.push_back({t.kernel, t.bytes_moved, cal::sample_stats(t.seconds)});

  // NCCL sweep (at least two ranks).
  const int hosts = distinct_hosts(MPI_COMM_WORLD, ranks);
  const std::vector<cal::CollectiveName> kinds{
      cal::CollectiveName::all_reduce, cal::CollectiveName::all_gather, cal::CollectiveName::reduce_scatter,
      cal::CollectiveName::all_to_all, cal::CollectiveName::send_recv};
  std::vector<std::vector<cal::CollectiveTiming>> timings;
  if (ranks > 1) {
    ncclComm_t nccl = cu::nccl_world(MPI_COMM_WORLD);
    std::vector<double> sizes;
    for (double s = 1024; s <= (o.quick ? 64.0 * (1 << 20) : 4096.0 * (1 << 20)); s *= o.quick ? 4 : 2)
      sizes.push_back(s);
    for (auto kind : kinds) timings.push_back(cu::time_nccl(MPI_COMM_WORLD, nccl, kind, sizes, repeats));
    ncclCommDestroy(nccl);
  }
  MPI_Comm_free(&local);
  if (rank != 0) return 0;

  const std::string run = fmt::format(
      "dtsim_calibrate_cuda{} on {} ({}, compute capability {}.{}, {} SMs), {} rank(s) on {} host(s), CUDA "
      "driver "
      "{}, runtime {}, cuBLASLt {}, NCCL {}, {}",
      o.quick ? " --quick" : "", cal::host_name(), gpu_name, prop.major, prop.minor, prop.multiProcessorCount,
      ranks, hosts, driver, runtime, cublasLtGetVersion(), nccl_version, cal::utc_now());
  m.id = id;
  m.name = gpu_name;
  m.run = run;
  m.memory_bytes = static_cast<double>(prop.totalGlobalMem);
  m.sm_count = prop.multiProcessorCount;
  m.tile_m = 128;
  m.tile_n = 256;
  m.main_precision = Precision::bf16;
  const cal::DeviceProfile device = cal::device_profile(m);
  const std::filesystem::path out(o.out);
  cal::write_profile_json(out / "gpus" / (id + ".json"),
                          dtsim::reports::gpu_profile_json(device.gpu, device.sources));
  std::cout << fmt::format("dtsim_calibrate_cuda: {}: GEMMs {}; HBM {:.0f} GB/s; wrote {}\n", gpu_name,
                           precisions, device.gpu.hbm_bandwidth_gbytes_per_s,
                           (out / "gpus" / (id + ".json")).string());
  if (timings.empty()) {
    std::cout << "one rank: no collectives measured (launch one rank per GPU with mpirun or srun)\n";
    return 0;
  }
  std::vector<std::string> logs;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const auto path = out / "logs" / fmt::format("{}-{}.log", id, cal::program_name(kinds[i]));
    cal::write_output_file(path,
                           cal::nccl_tests_log(kinds[i], ranks, "dtsim_calibrate_cuda (NCCL)", timings[i]));
    logs.push_back(path.string());
  }
  if (hosts > 1) {
    std::cout << fmt::format(
        "{} hosts: fit the fabric with dtsim import nccl-tests {} --node NODE --nodes {} --ranks-per-node {} "
        "--id "
        "FABRIC --out FABRIC.json\n",
        hosts, logs[0], hosts, ranks / hosts);
    return 0;
  }
  dtsim::config::NodeProfile node;
  node.id = id;
  node.name = fmt::format("{} x {} on {}", ranks, gpu_name, cal::host_name());
  node.gpu = id;
  node.gpus_per_node = ranks;
  node.intra_kind = o.intra_kind == "pcie"     ? dtsim::config::IntraNodeKind::pcie
                    : o.intra_kind == "nvlink" ? dtsim::config::IntraNodeKind::nvlink
                                               : dtsim::config::IntraNodeKind::nvswitch;
  const cal::LinkFit fit = cal::fit_intra_node_link(node, logs[0], timings[0], ranks, 1 << 20);
  node.fabric = "infiniband";
  node.nic_gbps = 400.0;
  node.nics_per_node = ranks;
  node.host_memory_bytes =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  const dtsim::reports::Sources sources{
      {"gpu", "the GPU profile written by the same run"},
      {"gpus_per_node", fmt::format("ranks (one per GPU) of {}", run)},
      {"intra_node",
       fmt::format(
           "gbytes_per_s and latency_us fitted to the NCCL all-reduce sweep {} (ring: t = 2(n-1) latency + "
           "2(n-1)/n S / bandwidth over sizes >= 1 MiB, fit error {:.1f}% over {} sizes), efficiency 1 as "
           "the fitted bandwidth is already achieved; kind given with --intra-kind ({}); bandwidth p10/p90 "
           "from the repeats; measured by {}",
           logs[0], fit.fit.mape, fit.fit.rows, o.intra_kind, run)},
      {"network",
       "not measured by a one-host run: infiniband, 400 Gb/s and one NIC per GPU are placeholders; fit the "
       "fabric "
       "with a multi-host run and dtsim import nccl-tests"},
      {"host_memory_bytes", fmt::format("physical memory reported by the host to {}", run)}};
  cal::write_profile_json(out / "nodes" / (id + ".json"), dtsim::reports::node_profile_json(node, sources));
  std::cout << fmt::format("intra-node all-reduce {:.1f} GB/s + {:.2f} us per step; wrote {}\n",
                           node.intra_gbytes_per_s, node.intra_latency_us,
                           (out / "nodes" / (id + ".json")).string());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return dtsim::calibration::mpi_main("dtsim_calibrate_cuda", argc, argv, run);
}

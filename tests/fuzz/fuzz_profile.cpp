// libFuzzer target: the hardware profile readers. The first byte picks the kind (gpu, node, fabric,
// software stack, parameter-server transport, by its value mod 5); the rest is written once per input to
// <temporary folder>/<kind folder>/fuzz.json and loaded as the profile "fuzz" (the loaders read files by
// id; tests/fuzz/run_fuzzers.sh makes the seeds from the repository's profiles with their id set to
// "fuzz").
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config/profile_loader.hpp"
#include "fuzz_target.hpp"

namespace {

constexpr std::array<const char*, 5> kFolders{"gpus", "nodes", "fabrics", "software", "ps_transports"};

// A fresh folder with the kinds' subfolders, made once per process.
const std::filesystem::path& profiles_folder() {
  static const std::filesystem::path folder = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "dtsim-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    for (const char* kind : kFolders)
      std::filesystem::create_directories(std::filesystem::path(pattern) / kind);
    return std::filesystem::path(pattern);
  }();
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t kind = data[0] % kFolders.size();
  const std::filesystem::path& folder = profiles_folder();
  {
    std::ofstream file(folder / kFolders[kind] / "fuzz.json", std::ios::binary | std::ios::trunc);
    file << dtsim::fuzz::as_text(data + 1, size - 1);
    if (!file) std::abort();
  }
  const dtsim::config::IdLocation where{"fuzz.json", "/id"};
  const std::string root = folder.string();
  return dtsim::fuzz::accept_or_refuse([&] {
    switch (kind) {
      case 0:
        dtsim::config::load_gpu_profile(root, "fuzz", where);
        break;
      case 1:
        dtsim::config::load_node_profile(root, "fuzz", where);
        break;
      case 2:
        dtsim::config::load_fabric_profile(root, "fuzz", where);
        break;
      case 3:
        dtsim::config::load_software_stack(root, "fuzz", where);
        break;
      default:
        dtsim::config::load_ps_transport(root, "fuzz", where);
        break;
    }
  });
}

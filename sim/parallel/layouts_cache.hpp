// Each rank mesh's symmetric-mode group layouts (GroupLayouts(mesh, false), group_layouts.hpp), built
// once and shared by every lowering that asks for the same mesh. A strategy search lowers hundreds of
// plans, and up to four short simulations of each (search/fast_evaluate.hpp), over a few hundred
// meshes; building the layouts walks every node of the cluster, so they are kept here. Thread-safe:
// the layouts handed out are never changed or freed while the cache lives.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "parallel/group_layouts.hpp"
#include "parallel/mesh.hpp"

namespace dtsim::parallel {

class LayoutsCache {
 public:
  const GroupLayouts& of(const Mesh& mesh);

 private:
  // The layouts refer to their mesh, so each entry keeps its own copy beside them.
  struct Entry {
    explicit Entry(const Mesh& m) : mesh(m), layouts(mesh, false) {}
    Mesh mesh;
    GroupLayouts layouts;
  };
  std::mutex mutex_;
  std::map<Mesh, std::unique_ptr<const Entry>> entries_;
};

}  // namespace dtsim::parallel

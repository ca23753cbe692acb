#include "parallel/group_layouts.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "core/errors.hpp"

namespace dtsim::parallel {

namespace {

// The nodes a group's members occupy, as offsets from its first member's node, and the most and the
// fewest members on one of them. It depends only on the first member's place in its node: the node of
// first + o is node(first) + (first mod g + o) / g.
struct Spread {
  std::vector<std::int64_t> node_offsets;
  std::int64_t most = 0;
  std::int64_t fewest = 0;
};

Spread spread_of(std::int64_t place, const std::vector<std::int64_t>& offsets, std::int64_t g) {
  Spread s;
  std::int64_t count = 0;
  const auto close_run = [&] {
    s.most = std::max(s.most, count);
    s.fewest = s.fewest == 0 ? count : std::min(s.fewest, count);
  };
  for (const std::int64_t o : offsets) {  // ascending, so nodes are too
    const std::int64_t node = (place + o) / g;
    if (s.node_offsets.empty() || s.node_offsets.back() != node) {
      if (!s.node_offsets.empty()) close_run();
      s.node_offsets.push_back(node);
      count = 0;
    }
    ++count;
  }
  close_run();
  return s;
}

// The layout of a group of `size` members with `spread`, `concurrent` groups sharing a node's NICs.
graph::CommGroup layout_of(std::int64_t size, const Spread& spread, std::int64_t concurrent) {
  graph::CommGroup g;
  g.size = size;
  g.nodes = static_cast<std::int64_t>(spread.node_offsets.size());
  g.concurrent_per_node = std::max<std::int64_t>(1, concurrent);
  if (spread.most != spread.fewest) g.uneven = graph::UnevenSpread{spread.most, spread.fewest};
  const auto& nodes = spread.node_offsets;
  if (nodes.size() >= 2) {
    const std::int64_t step = nodes[1] - nodes[0];
    bool even = true;
    for (std::size_t i = 1; i < nodes.size(); ++i) even = even && nodes[i] - nodes[i - 1] == step;
    if (even) g.node_stride = step;
  }
  return g;
}

}  // namespace

bool heavier(const graph::CommGroup& a, const graph::CommGroup& b) {
  const auto weight = [](const graph::CommGroup& g) {
    // A group's share of a node's NICs: 1 / concurrent_per_node of them at nic_speed.
    return std::make_tuple(g.nodes > 1, static_cast<double>(g.concurrent_per_node) / g.nic_speed,
                           1.0 / g.nvlink_speed, 1.0 / g.uplink_speed, g.nodes, g.ranks_per_node(),
                           g.node_stride);
  };
  return weight(a) > weight(b);
}

GroupLayouts::GroupLayouts(const Mesh& mesh, bool per_rank, config::NodeLinkSpeeds speeds)
    : mesh_(mesh), per_rank_(per_rank), speeds_(std::move(speeds)), tables_(kSlots) {
  const std::int64_t nodes = (mesh.size() + mesh.gpus_per_node() - 1) / mesh.gpus_per_node();
  for (Table& t : tables_) {
    if (per_rank_) t.of_rank.assign(static_cast<std::size_t>(mesh.size()), 0);
    t.of_stage.assign(static_cast<std::size_t>(mesh.degree(config::MeshDim::pipeline)), 0);
    t.stage_kept.assign(t.of_stage.size(), 0);
  }
  leaving_.assign(static_cast<std::size_t>(nodes), 0);
  arriving_.assign(static_cast<std::size_t>(nodes), 0);
  for (const GroupKind kind : {GroupKind::tensor, GroupKind::context, GroupKind::data}) add_groups(kind);
  if (mesh.has_expert_groups()) {
    add_groups(GroupKind::expert);
    add_groups(GroupKind::expert_data);
  } else {  // no expert groups: the experts' gradients are reduced over the data group
    tables_[kExpert].layouts.push_back(graph::CommGroup{});
    tables_[kExpertData] = tables_[kData];
  }
  add_exchanges();
  add_transfers(true);
  add_transfers(false);
}

std::uint32_t GroupLayouts::intern(Table& table, const graph::CommGroup& layout) {
  const auto it = std::find(table.layouts.begin(), table.layouts.end(), layout);
  if (it != table.layouts.end()) return static_cast<std::uint32_t>(it - table.layouts.begin());
  table.layouts.push_back(layout);
  return static_cast<std::uint32_t>(table.layouts.size() - 1);
}

// Records `layout` as rank's and, where it is the slowest so far, as its stage's.
void GroupLayouts::keep(Table& table, std::int64_t rank, std::int64_t stage, const graph::CommGroup& layout) {
  const std::uint32_t index = intern(table, layout);
  if (per_rank_) table.of_rank[static_cast<std::size_t>(rank)] = index;
  // The slowest among the stage's own layouts: the first one kept for the stage starts the comparison
  // (not the table's first layout, which may be another stage's).
  std::uint32_t& slowest = table.of_stage[static_cast<std::size_t>(stage)];
  std::uint8_t& kept = table.stage_kept[static_cast<std::size_t>(stage)];
  if (kept == 0 || heavier(layout, table.layouts[slowest])) slowest = index;
  kept = 1;
}

void GroupLayouts::add_groups(GroupKind kind) {
  Table& table = tables_[static_cast<int>(kind)];
  const std::int64_t g = mesh_.gpus_per_node();
  const std::int64_t n = mesh_.size();
  std::vector<std::int64_t> offsets;
  mesh_.group_members(Coord{}, kind, offsets);
  if (offsets.size() <= 1) {
    table.layouts.push_back(graph::CommGroup{});  // every rank and stage at index 0
    return;
  }
  const auto size = static_cast<std::int64_t>(offsets.size());
  std::vector<std::optional<Spread>> spreads(static_cast<std::size_t>(g));
  const auto spread = [&](std::int64_t first) -> const Spread& {
    std::optional<Spread>& s = spreads[static_cast<std::size_t>(first % g)];
    if (!s) s = spread_of(first % g, offsets, g);
    return *s;
  };
  // Groups across nodes with members on each node.
  std::vector<std::int32_t> crossing(leaving_.size(), 0);
  std::vector<std::int64_t> firsts;
  for (std::size_t node = 0; node < crossing.size(); ++node) {
    firsts.clear();
    const auto begin = static_cast<std::int64_t>(node) * g;
    for (std::int64_t r = begin; r < std::min(n, begin + g); ++r) {
      const std::int64_t first = mesh_.first_member(r, kind);
      if (spread(first).node_offsets.size() > 1) firsts.push_back(first);
    }
    std::sort(firsts.begin(), firsts.end());
    crossing[node] = static_cast<std::int32_t>(std::unique(firsts.begin(), firsts.end()) - firsts.begin());
  }
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t first = mesh_.first_member(r, kind);
    if (first != r) {  // first < r: its layout is known
      if (per_rank_)
        table.of_rank[static_cast<std::size_t>(r)] = table.of_rank[static_cast<std::size_t>(first)];
      continue;
    }
    const Spread& s = spread(first);
    std::int64_t concurrent = std::max<std::int64_t>(1, g / s.most);
    if (s.node_offsets.size() > 1) {
      concurrent = 0;
      for (const std::int64_t o : s.node_offsets)
        concurrent = std::max<std::int64_t>(concurrent, crossing[static_cast<std::size_t>(first / g + o)]);
    }
    graph::CommGroup layout = layout_of(size, s, concurrent);
    for (const std::int64_t o : s.node_offsets) {
      if (s.node_offsets.size() > 1) layout.nic_speed = std::min(layout.nic_speed, nic_speed(first / g + o));
      layout.nvlink_speed = std::min(layout.nvlink_speed, nvlink_speed(first / g + o));
    }
    layout.uplink_speed = uplink_speed(first / g, s.node_offsets);
    keep(table, r, mesh_.coord_of(r).stage, layout);
  }
}

graph::CommGroup GroupLayouts::pair(std::int64_t from, std::int64_t to) const {
  const std::int64_t a = mesh_.node_of(from);
  const std::int64_t b = mesh_.node_of(to);
  if (a == b) {
    graph::CommGroup inside{2, 1, std::max<std::int64_t>(1, mesh_.gpus_per_node() / 2)};
    inside.nvlink_speed = nvlink_speed(a);
    return inside;
  }
  const std::int32_t concurrent =
      std::max(leaving_[static_cast<std::size_t>(a)], arriving_[static_cast<std::size_t>(b)]);
  graph::CommGroup out{2, 2, concurrent, a < b ? b - a : a - b};
  out.nic_speed = std::min(nic_speed(a), nic_speed(b));
  if (speeds_.leaves.block_of(a) != speeds_.leaves.block_of(b))
    out.uplink_speed = std::min(factor(speeds_.uplink, a), factor(speeds_.uplink, b));
  return out;
}

graph::CommGroup GroupLayouts::transfer_between(std::int64_t from, std::int64_t to, bool next) const {
  const std::int64_t a = mesh_.node_of(from);
  const std::int64_t b = mesh_.node_of(to);
  if (a == b) return pair(from, to);
  const graph::CommGroup& usual = transfer(from, next);
  graph::CommGroup out{2, 2, usual.nodes > 1 ? usual.concurrent_per_node : 1, a < b ? b - a : a - b};
  out.nic_speed = std::min(nic_speed(a), nic_speed(b));
  if (speeds_.leaves.block_of(a) != speeds_.leaves.block_of(b))
    out.uplink_speed = std::min(factor(speeds_.uplink, a), factor(speeds_.uplink, b));
  return out;
}

double GroupLayouts::uplink_speed(std::int64_t first, const std::vector<std::int64_t>& offsets) const {
  if (speeds_.uplink.empty() || offsets.empty()) return 1.0;
  const std::int64_t leaf = speeds_.leaves.block_of(first + offsets.front());
  bool several = false;
  double slowest = 1.0;
  for (const std::int64_t o : offsets) {
    several = several || speeds_.leaves.block_of(first + o) != leaf;
    slowest = std::min(slowest, factor(speeds_.uplink, first + o));
  }
  return several ? slowest : 1.0;
}

// Every stage's transfers to its next (or preceding) stage run at once: counted per pair of stages.
void GroupLayouts::add_transfers(bool next) {
  Table& table = tables_[next ? kNext : kPrevious];
  const std::int64_t p = mesh_.degree(config::MeshDim::pipeline);
  if (p <= 1) {
    table.layouts.push_back(graph::CommGroup{});
    return;
  }
  std::vector<std::int64_t> senders;
  for (std::int64_t stage = 0; stage < p; ++stage) {
    const std::int64_t to_stage = next ? (stage + 1) % p : (stage + p - 1) % p;
    const std::int64_t shift = (to_stage - stage) * mesh_.stride(config::MeshDim::pipeline);
    senders.clear();
    Coord c{stage, 0, 0, 0};
    for (c.data = 0; c.data < mesh_.degree(config::MeshDim::data); ++c.data) {
      for (c.context = 0; c.context < mesh_.degree(config::MeshDim::context); ++c.context) {
        for (c.tensor = 0; c.tensor < mesh_.degree(config::MeshDim::tensor); ++c.tensor)
          senders.push_back(mesh_.rank_of(c));
      }
    }
    const auto count = [&](std::int32_t by) {
      for (const std::int64_t r : senders) {
        if (mesh_.node_of(r) == mesh_.node_of(r + shift)) continue;
        leaving_[static_cast<std::size_t>(mesh_.node_of(r))] += by;
        arriving_[static_cast<std::size_t>(mesh_.node_of(r + shift))] += by;
      }
    };
    count(1);
    for (const std::int64_t r : senders) keep(table, r, stage, pair(r, r + shift));
    count(-1);
  }
}

// All rings exchange at once: their pairs across nodes are counted together.
void GroupLayouts::add_exchanges() {
  Table& table = tables_[kExchange];
  const std::int64_t n = mesh_.size();
  std::vector<std::int64_t> offsets;
  mesh_.group_members(Coord{}, GroupKind::context, offsets);
  const auto size = offsets.size();
  if (size <= 1) {
    table.layouts.push_back(graph::CommGroup{});
    return;
  }
  const auto for_each_pair = [&](std::int64_t first, auto&& fn) {
    for (std::size_t i = 0; i < size; ++i) fn(first + offsets[i], first + offsets[(i + 1) % size]);
  };
  const auto count = [&](std::int32_t by) {
    for (std::int64_t r = 0; r < n; ++r) {
      if (mesh_.first_member(r, GroupKind::context) != r) continue;
      for_each_pair(r, [&](std::int64_t a, std::int64_t b) {
        if (mesh_.node_of(a) == mesh_.node_of(b)) return;
        leaving_[static_cast<std::size_t>(mesh_.node_of(a))] += by;
        arriving_[static_cast<std::size_t>(mesh_.node_of(b))] += by;
      });
    }
  };
  count(1);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t first = mesh_.first_member(r, GroupKind::context);
    if (first != r) {
      if (per_rank_)
        table.of_rank[static_cast<std::size_t>(r)] = table.of_rank[static_cast<std::size_t>(first)];
      continue;
    }
    graph::CommGroup slowest = pair(first + offsets[0], first + offsets[1]);
    for_each_pair(first, [&](std::int64_t a, std::int64_t b) {
      const graph::CommGroup p = pair(a, b);
      if (heavier(p, slowest)) slowest = p;
    });
    keep(table, r, mesh_.coord_of(r).stage, slowest);
  }
  count(-1);
}

const graph::CommGroup& GroupLayouts::of_rank(int slot, std::int64_t r) const {
  const Table& t = tables_[static_cast<std::size_t>(slot)];
  if (t.layouts.size() == 1) return t.layouts.front();
  DTSIM_CHECK(per_rank_, "per-rank group layouts asked of a symmetric mesh");
  return t.layouts[t.of_rank[static_cast<std::size_t>(r)]];
}

const graph::CommGroup& GroupLayouts::of_stage(int slot, std::int64_t stage) const {
  const Table& t = tables_[static_cast<std::size_t>(slot)];
  return t.layouts[t.of_stage[static_cast<std::size_t>(stage)]];
}

const graph::CommGroup& GroupLayouts::group(std::int64_t r, GroupKind kind) const {
  return of_rank(static_cast<int>(kind), r);
}
const graph::CommGroup& GroupLayouts::stage_group(std::int64_t stage, GroupKind kind) const {
  return of_stage(static_cast<int>(kind), stage);
}
const graph::CommGroup& GroupLayouts::exchange(std::int64_t r) const { return of_rank(kExchange, r); }
const graph::CommGroup& GroupLayouts::stage_exchange(std::int64_t stage) const {
  return of_stage(kExchange, stage);
}
const graph::CommGroup& GroupLayouts::transfer(std::int64_t r, bool next) const {
  return of_rank(next ? kNext : kPrevious, r);
}
const graph::CommGroup& GroupLayouts::stage_transfer(std::int64_t stage, bool next) const {
  return of_stage(next ? kNext : kPrevious, stage);
}

}  // namespace dtsim::parallel

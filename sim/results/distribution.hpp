// Summaries of a sample as the data-parallel result reports them (results/data_parallel_result.hpp,
// Distribution): mean, nearest-rank p50 and p99 (core/nearest_rank.hpp: the ceil(q n)-th smallest value,
// one of the values, the rule of every percentile dtsim states) and maximum.
#pragma once

#include <cstdint>
#include <vector>

#include "results/data_parallel_result.hpp"

namespace dtsim::results {

// Of the values (any order); all zero when empty.
Distribution distribution_of(std::vector<double> values);
// Of a sample given as counts per value: counts[v] occurrences of the value v; all zero when empty.
Distribution distribution_of_counts(const std::vector<std::uint64_t>& counts);

}  // namespace dtsim::results

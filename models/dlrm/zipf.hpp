// Popularity of embedding rows: the k-th most looked-up of R rows is looked up with probability
// p_k = k^-s / H(R, s) (Zipf with exponent s; s = 0: every row alike), H(k, s) = sum_{i <= k} i^-s the
// generalized harmonic number. What a table's lookups then touch (docs/dlrm.md):
//   a cache of the c R most popular rows serves  h = H(c R, s) / H(R, s)  of the lookups (h = c for s = 0)
//   n independent lookups touch  U = sum_k 1 - (1 - p_k)^n  distinct rows   (s = 0: R (1 - (1 - 1/R)^n)),
//   summed exactly over the 1,000 most popular rows and over bins of a 1/128 decade above them, each
//   bin's rows at the probability of its geometric middle (within 0.1% of the exact sum in the tests).
#pragma once

namespace dtsim::models {

// H(k, s) for k >= 1: exact up to 1000 terms, then the integral of the tail.
double zipf_harmonic(double k, double exponent);

// Fraction of lookups a cache of `fraction` of `rows` rows serves, under Zipf popularity `exponent`.
double zipf_cache_hit_rate(double rows, double fraction, double exponent);

// Expected distinct rows among `lookups` independent lookups of a table of `rows` rows.
double zipf_distinct_rows(double rows, double lookups, double exponent);

}  // namespace dtsim::models

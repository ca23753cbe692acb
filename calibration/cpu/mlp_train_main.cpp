// dtsim_mlp_train: a small real data-parallel training program, the measured side of the CPU loop
// (calibrate -> train -> predict). Every MPI rank trains the same MLP (models/mlp/mlp.hpp: input ->
// hidden (ReLU), `layers` x hidden -> hidden (ReLU), hidden -> output, mean-squared error) on its own
// micro-batch of synthetic regression data (targets from a fixed random linear map of the inputs), with
// GEMMs in OpenBLAS (cblas_sgemm, fp32), the gradients of all layers summed with one MPI_Allreduce after
// the backward pass and averaged, then a plain SGD step. It prints the step time (the slowest rank's,
// median and p10/p90 over the timed steps) and the loss of the first and last step:
//
//   mpirun -np 2 dtsim_mlp_train --input 512 --hidden 1024 --layers 2 --output 64 --batch 128 --steps 30
//   step_time_s median=... p10=... p90=... steps=... loss_first=... loss_last=...
#include <cblas.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "calibration/mpi_main.hpp"
#include "calibration/sample_stats.hpp"

namespace {

struct Options {
  int input = 512;
  int hidden = 1024;
  int layers = 2;
  int output = 64;
  int batch = 128;
  int steps = 30;
  int warmup = 3;
  int threads = 1;
  float lr = 0.01f;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const std::string v = argv[i + 1];
    if (a == "--input")
      o.input = std::stoi(v);
    else if (a == "--hidden")
      o.hidden = std::stoi(v);
    else if (a == "--layers")
      o.layers = std::stoi(v);
    else if (a == "--output")
      o.output = std::stoi(v);
    else if (a == "--batch")
      o.batch = std::stoi(v);
    else if (a == "--steps")
      o.steps = std::stoi(v);
    else if (a == "--warmup")
      o.warmup = std::stoi(v);
    else if (a == "--threads")
      o.threads = std::stoi(v);
    else if (a == "--lr")
      o.lr = std::stof(v);
    else
      throw std::invalid_argument("unknown argument " + a);
  }
  if (o.input < 1 || o.hidden < 1 || o.layers < 0 || o.output < 1 || o.batch < 1 || o.steps < 1 ||
      o.warmup < 0)
    throw std::invalid_argument("sizes must be positive");
  return o;
}

void fill(std::vector<float>& v, std::uint64_t seed, float scale) {
  std::uint64_t x = seed;
  for (float& f : v) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    f = scale * static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

// C[m x n] = op(A) op(B) with row-major storage.
void gemm(bool ta, bool tb, int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a,
              ta ? m : k, b, tb ? k : n, 0.0f, c, n);
}

struct Layer {
  int in = 0;
  int out = 0;
  std::size_t w = 0;      // offset of W (in x out) in the parameter buffer; bias follows
  std::vector<float> y;   // output (after ReLU for hidden layers)
  std::vector<float> dy;  // gradient of the output
};

int run(int argc, char** argv) {
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const Options o = parse(argc, argv);
  openblas_set_num_threads(o.threads);
  const int b = o.batch;

  std::vector<int> widths{o.input, o.hidden};
  for (int i = 0; i < o.layers; ++i) widths.push_back(o.hidden);
  widths.push_back(o.output);
  std::vector<Layer> net;
  std::size_t params = 0;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    Layer l;
    l.in = widths[i];
    l.out = widths[i + 1];
    l.w = params;
    params +=
        static_cast<std::size_t>(l.in) * static_cast<std::size_t>(l.out) + static_cast<std::size_t>(l.out);
    l.y.resize(static_cast<std::size_t>(b) * static_cast<std::size_t>(l.out));
    l.dy.resize(l.y.size());
    net.push_back(std::move(l));
  }
  std::vector<float> weights(params);
  std::vector<float> grads(params);
  for (const auto& l : net) {
    std::vector<float> w(static_cast<std::size_t>(l.in) * static_cast<std::size_t>(l.out));
    fill(w, 17 + l.w, std::sqrt(2.0f / static_cast<float>(l.in)));  // same on every rank (He initialization)
    std::copy(w.begin(), w.end(), weights.begin() + static_cast<std::ptrdiff_t>(l.w));
  }
  std::vector<float> x(static_cast<std::size_t>(b) * static_cast<std::size_t>(o.input));
  std::vector<float> teacher(static_cast<std::size_t>(o.input) * static_cast<std::size_t>(o.output));
  std::vector<float> target(static_cast<std::size_t>(b) * static_cast<std::size_t>(o.output));
  fill(teacher, 5, 1.0f / std::sqrt(static_cast<float>(o.input)));

  std::vector<double> step_s;
  double loss_first = 0.0;
  double loss_last = 0.0;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    // This rank's micro-batch (fixed data set of 8 batches per rank), prepared outside the timed step.
    fill(x, 1000 + static_cast<std::uint64_t>(rank * 8 + step % 8), 1.0f);
    gemm(false, false, b, o.output, o.input, x.data(), teacher.data(), target.data());
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();

    const float* in = x.data();
    for (std::size_t i = 0; i < net.size(); ++i) {
      Layer& l = net[i];
      const float* w = weights.data() + l.w;
      const float* bias = w + static_cast<std::size_t>(l.in) * static_cast<std::size_t>(l.out);
      gemm(false, false, b, l.out, l.in, in, w, l.y.data());
      const bool relu = i + 1 < net.size();
      for (int r = 0; r < b; ++r) {
        float* row = l.y.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(l.out);
        for (int c = 0; c < l.out; ++c) row[c] = relu ? std::max(0.0f, row[c] + bias[c]) : row[c] + bias[c];
      }
      in = l.y.data();
    }
    Layer& last = net.back();
    double loss = 0.0;
    for (std::size_t i = 0; i < last.y.size(); ++i) {
      const float e = last.y[i] - target[i];
      loss += static_cast<double>(e) * e;
      last.dy[i] = 2.0f * e / static_cast<float>(b * o.output);
    }
    loss /= static_cast<double>(last.y.size());

    for (std::size_t i = net.size(); i-- > 0;) {
      Layer& l = net[i];
      if (i + 1 < net.size()) {
        for (std::size_t j = 0; j < l.dy.size(); ++j) l.dy[j] = l.y[j] > 0.0f ? l.dy[j] : 0.0f;
      }
      const float* layer_in = i == 0 ? x.data() : net[i - 1].y.data();
      float* dw = grads.data() + l.w;
      float* db = dw + static_cast<std::size_t>(l.in) * static_cast<std::size_t>(l.out);
      gemm(true, false, l.in, l.out, b, layer_in, l.dy.data(), dw);
      std::fill(db, db + l.out, 0.0f);
      for (int r = 0; r < b; ++r) {
        const float* row = l.dy.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(l.out);
        for (int c = 0; c < l.out; ++c) db[c] += row[c];
      }
      if (i > 0) gemm(false, true, b, l.in, l.out, l.dy.data(), weights.data() + l.w, net[i - 1].dy.data());
    }
    MPI_Allreduce(MPI_IN_PLACE, grads.data(), static_cast<int>(params), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const float scale = o.lr / static_cast<float>(ranks);
    for (std::size_t j = 0; j < params; ++j) weights[j] -= scale * grads[j];

    const double mine = MPI_Wtime() - start;
    double slowest = 0.0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double total_loss = 0.0;
    MPI_Allreduce(&loss, &total_loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    total_loss /= ranks;
    if (step == 0) loss_first = total_loss;
    loss_last = total_loss;
    if (step >= o.warmup) step_s.push_back(slowest);
  }
  if (!std::isfinite(loss_last)) throw std::runtime_error("training diverged (loss is not finite)");
  if (rank == 0) {
    const auto s = dtsim::calibration::sample_stats(step_s);
    std::cout << fmt::format(
        "step_time_s median={:.6f} p10={:.6f} p90={:.6f} steps={} ranks={} params={} loss_first={:.6g} "
        "loss_last={:.6g}\n",
        s.median, s.p10, s.p90, s.count, ranks, params, loss_first, loss_last);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return dtsim::calibration::mpi_main("dtsim_mlp_train", argc, argv, run); }

// SPDX-License-Identifier: BSD-3-Clause
#include "mixsolve/gemm/evaluation.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "mixsolve/core/convert.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/norms.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::gemm {

double median_seconds(Context& ctx, Memory memory, int repetitions, const std::function<void()>& run,
                      const std::function<void()>& prepare) {
  if (repetitions < 1) throw InvalidArgument("median_seconds: repetitions (" + std::to_string(repetitions) + ") < 1");
  std::vector<double> seconds;
  if (memory == Memory::Device) {
    cudaEvent_t start, stop;
    MIXSOLVE_CUDA_CHECK(cudaEventCreate(&start));
    MIXSOLVE_CUDA_CHECK(cudaEventCreate(&stop));
    for (int r = 0; r < repetitions; ++r) {
      if (prepare) prepare();
      MIXSOLVE_CUDA_CHECK(cudaEventRecord(start, ctx.stream()));
      run();
      MIXSOLVE_CUDA_CHECK(cudaEventRecord(stop, ctx.stream()));
      MIXSOLVE_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      MIXSOLVE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      seconds.push_back(ms * 1e-3);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  } else {
    for (int r = 0; r < repetitions; ++r) {
      if (prepare) prepare();
      const auto t0 = std::chrono::steady_clock::now();
      run();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

std::vector<InputClass> ootomo_yokota_input_classes(std::uint64_t seed) {
  const RandomSpec mid = RandomSpec::exp_rand(-15, 15, seed + 1);
  return {
      {"uniform(-1,1)", RandomSpec::uniform(-1, 1, seed), RandomSpec::uniform(-1, 1, seed + 10)},
      {"exp_rand(-15,15)", RandomSpec::exp_rand(-15, 15, seed + 2), mid},
      {"exp_rand(-35,-15) x exp_rand(-15,15)", RandomSpec::exp_rand(-35, -15, seed + 3), mid},
      {"exp_rand(-45,-35) x exp_rand(-15,15)", RandomSpec::exp_rand(-45, -35, seed + 4), mid},
  };
}

// Storage in host vectors or device buffers; views into it.
struct GemmEvaluator::Buffers {
  std::vector<float> host_f32[3];
  std::vector<double> host_f64[4];  // A, B, C (for FP64 backends), reference
  DeviceBuffer<float> dev_f32[3];
  DeviceBuffer<double> dev_f64[4];
  float* f32(int i, Memory m) { return m == Memory::Host ? host_f32[i].data() : dev_f32[i].data(); }
  double* f64(int i, Memory m) { return m == Memory::Host ? host_f64[i].data() : dev_f64[i].data(); }
};

GemmEvaluator::GemmEvaluator(Context& ctx, Memory memory, std::int64_t m, std::int64_t n, std::int64_t k)
    : ctx_(ctx), memory_(memory), m_(m), n_(n), k_(k), buffers_(std::make_unique<Buffers>()) {
  if (m <= 0 || n <= 0 || k <= 0)
    throw InvalidArgument("GemmEvaluator: sizes must be positive (m = " + std::to_string(m) +
                          ", n = " + std::to_string(n) + ", k = " + std::to_string(k) + ")");
  const std::size_t sizes[3] = {std::size_t(m * k), std::size_t(k * n), std::size_t(m * n)};
  for (int i = 0; i < 4; ++i) {
    const std::size_t count = i < 3 ? sizes[i] : sizes[2];
    if (memory == Memory::Host) {
      if (i < 3) buffers_->host_f32[i].resize(count);
      buffers_->host_f64[i].resize(count);
    } else {
      if (i < 3) buffers_->dev_f32[i] = DeviceBuffer<float>(count);
      buffers_->dev_f64[i] = DeviceBuffer<double>(count);
    }
  }
}

GemmEvaluator::~GemmEvaluator() = default;

void GemmEvaluator::set_inputs(const InputClass& input) {
  input_name_ = input.name;
  Buffers& b = *buffers_;
  cudaStream_t stream = memory_ == Memory::Device ? ctx_.stream() : nullptr;
  const MatrixView<float> a{b.f32(0, memory_), m_, k_, m_, memory_};
  const MatrixView<float> bb{b.f32(1, memory_), k_, n_, k_, memory_};
  fill_random(a, input.a, stream);
  fill_random(bb, input.b, stream);
  convert(a, {b.f64(0, memory_), m_, k_, m_, memory_}, stream);
  convert(bb, {b.f64(1, memory_), k_, n_, k_, memory_}, stream);
  const Backend& reference = find_backend(memory_ == Memory::Device ? "cublas-dgemm" : "host-fp64");
  GemmArgs<double> args{
      Op::N, Op::N, m_, n_, k_, 1.0, b.f64(0, memory_), m_, b.f64(1, memory_), k_, 0.0, b.f64(3, memory_), m_};
  reference.run(ctx_, args);
  ctx_.synchronize();
}

Evaluation GemmEvaluator::evaluate(const Backend& backend, int repetitions) {
  Evaluation e;
  e.backend = backend.name();
  e.input_class = input_name_;
  e.m = m_;
  e.n = n_;
  e.k = k_;
  if (backend.memory() != memory_) {
    e.error = "backend works on " + std::string(to_string(backend.memory())) + " memory";
    return e;
  }
  Buffers& b = *buffers_;
  const bool fp64 = backend.data_type() == DataType::F64;
  auto run_once = [&] {
    if (fp64) {
      GemmArgs<double> g{
          Op::N, Op::N, m_, n_, k_, 1.0, b.f64(0, memory_), m_, b.f64(1, memory_), k_, 0.0, b.f64(2, memory_), m_};
      backend.run(ctx_, g);
    } else {
      GemmArgs<float> g{
          Op::N, Op::N, m_, n_, k_, 1.0f, b.f32(0, memory_), m_, b.f32(1, memory_), k_, 0.0f, b.f32(2, memory_), m_};
      backend.run(ctx_, g);
    }
  };
  try {
    run_once();  // warm-up: workspace growth, module load, cuBLAS heuristics
    ctx_.synchronize();
  } catch (const Error& err) {
    e.error = err.what();
    return e;
  }
  if (repetitions > 0) {
    e.median_seconds = median_seconds(ctx_, memory_, repetitions, run_once);
    e.tflops = 2.0 * double(m_) * double(n_) * double(k_) / e.median_seconds * 1e-12;
  }
  cudaStream_t stream = memory_ == Memory::Device ? ctx_.stream() : nullptr;
  const MatrixView<const double> ref{b.f64(3, memory_), m_, n_, m_, memory_};
  const ErrorStats s =
      fp64 ? compare_to_reference(MatrixView<const double>{b.f64(2, memory_), m_, n_, m_, memory_}, ref, stream)
           : compare_to_reference(MatrixView<const float>{b.f32(2, memory_), m_, n_, m_, memory_}, ref, stream);
  e.relative_error = s.relative_error;
  e.max_relative_error = s.max_relative_error;
  e.nonfinite = s.nonfinite;
  return e;
}

SweepResult run_k_sweep(Context& ctx, Memory memory, const std::vector<const Backend*>& backends, std::int64_t n,
                        const std::vector<std::int64_t>& ks, const std::vector<InputClass>& classes, int repetitions) {
  SweepResult result;
  const Backend& baseline = find_backend(memory == Memory::Device ? "cublas-sgemm" : "host-fp32");
  result.baseline = baseline.name();
  for (const InputClass& input : classes)
    for (std::int64_t k : ks) {
      GemmEvaluator eval(ctx, memory, n, n, k);
      eval.set_inputs(input);
      bool baseline_listed = false;
      for (const Backend* b : backends) baseline_listed |= b == &baseline;
      if (!baseline_listed) result.rows.push_back(eval.evaluate(baseline, repetitions));
      for (const Backend* b : backends) result.rows.push_back(eval.evaluate(*b, repetitions));
    }
  return result;
}

std::string format_k_sweep(const SweepResult& sweep) {
  // Group rows: class -> backend -> k -> evaluation.
  std::vector<std::string> classes, backends;
  std::vector<std::int64_t> ks;
  std::map<std::string, std::map<std::string, std::map<std::int64_t, const Evaluation*>>> grid;
  auto remember = [](auto& list, const auto& v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  for (const Evaluation& e : sweep.rows) {
    remember(classes, e.input_class);
    remember(backends, e.backend);
    remember(ks, e.k);
    grid[e.input_class][e.backend][e.k] = &e;
  }
  std::string out;
  char cell[64];
  for (const std::string& c : classes) {
    out += "\n" + c + " (relative error; '<=' : no larger than " + sweep.baseline + ")\n";
    std::snprintf(cell, sizeof cell, "%-20s", "backend \\ k");
    out += cell;
    for (std::int64_t k : ks) {
      std::snprintf(cell, sizeof cell, " %11lld   ", static_cast<long long>(k));
      out += cell;
    }
    out += "  TFLOP/s\n";
    for (const std::string& b : backends) {
      std::snprintf(cell, sizeof cell, "%-20s", b.c_str());
      out += cell;
      const Evaluation* last = nullptr;
      for (std::int64_t k : ks) {
        const Evaluation* e = grid[c][b][k];
        const Evaluation* base = grid[c][sweep.baseline][k];
        if (e == nullptr)
          std::snprintf(cell, sizeof cell, " %14s", "-");
        else if (!e->error.empty())
          std::snprintf(cell, sizeof cell, " %14s", "refused");
        else {
          const bool le = base && e->relative_error <= base->relative_error;
          std::snprintf(cell, sizeof cell, " %11.2e %2s", e->relative_error, le ? "<=" : "");
          last = e;
        }
        out += cell;
      }
      std::snprintf(cell, sizeof cell, " %8.3g\n", last ? last->tflops : 0.0);
      out += cell;
    }
  }
  return out;
}

}  // namespace mixsolve::gemm

// SPDX-License-Identifier: BSD-3-Clause
// The slfp-<format> backends: A and B rounded (RN) into an SLFP format of Mukunoki & Imamura (2016), then
// multiplied by slfp::gemm, which widens them a panel at a time and computes in the format's base
// type (FP64 for the slfp64 formats, FP32 for the slfp32 ones). The result is the exact-arithmetic
// product of the rounded operands up to the base type's rounding: what a computation whose
// matrices are stored short gets.
#include <memory>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "device_common.hpp"
#include "mixsolve/slfp/blas.hpp"

namespace mixsolve::gemm {

namespace {

constexpr std::int64_t kCublasSizeLimit = 2147483647;  // slfp::gemm's cuBLAS calls take int sizes

class SlfpGemm final : public Backend {
 public:
  explicit SlfpGemm(slfp::Format format) : format_(format) {}
  // "slfp-64in48b" for slfp64in48b.
  std::string name() const override { return "slfp-" + std::string(slfp::to_string(format_)).substr(4); }
  std::string description() const override {
    return std::string("A and B rounded to ") + slfp::to_string(format_) + " (" +
           std::to_string(slfp::container_bits(format_)) +
           "-bit SLFP, Mukunoki & Imamura 2016), widened a panel at a time, " +
           (fp64() ? "cublasDgemm" : "cublasSgemm (no TF32)") + " on the panels; " + (fp64() ? "FP64" : "FP32") +
           " data";
  }
  DataType data_type() const override { return fp64() ? DataType::F64 : DataType::F32; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 0); }
  std::size_t workspace_bytes(const GemmShape& s) const override {
    return encoded_bytes(s) + slfp::gemm_workspace_bytes(format_, s.m, s.n, s.k);
  }

 protected:
  std::int64_t size_limit() const override { return kCublasSizeLimit; }
  void run_f64(Context& ctx, const GemmArgs<double>& a) const override { run_typed(ctx, a); }
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override { run_typed(ctx, a); }

 private:
  bool fp64() const { return slfp::fp64_based(format_); }

  // A and B as stored: rows x cols with their leading dimensions.
  static std::int64_t stored_size(std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    return rows == 0 || cols == 0 ? 0 : (cols - 1) * ld + rows;
  }
  template <class T>
  static std::int64_t a_size(const GemmArgs<T>& g) {
    return g.op_a == Op::N ? stored_size(g.m, g.k, g.lda) : stored_size(g.k, g.m, g.lda);
  }
  template <class T>
  static std::int64_t b_size(const GemmArgs<T>& g) {
    return g.op_b == Op::N ? stored_size(g.k, g.n, g.ldb) : stored_size(g.n, g.k, g.ldb);
  }
  // The encoded operands, with the leading dimensions at their least (m or k rows).
  std::size_t encoded_bytes(const GemmShape& s) const {
    return slfp::placed_bytes(format_, s.m * s.k) + slfp::placed_bytes(format_, s.k * s.n);
  }

  template <class T>
  void run_typed(Context& ctx, const GemmArgs<T>& g) const {
    // The operands are encoded with their callers' leading dimensions (the padding is encoded too
    // and never read), so the workspace follows the stored sizes.
    const std::int64_t a_values = a_size(g), b_values = b_size(g);
    const std::size_t a_bytes = slfp::placed_bytes(format_, a_values), b_bytes = slfp::placed_bytes(format_, b_values);
    char* base =
        static_cast<char*>(ctx.workspace(a_bytes + b_bytes + slfp::gemm_workspace_bytes(format_, g.m, g.n, g.k)));
    const slfp::Vector a = slfp::place(format_, a_values, Memory::Device, base);
    const slfp::Vector b = slfp::place(format_, b_values, Memory::Device, base + a_bytes);
    slfp::encode(ctx, g.a, a, slfp::Rounding::NearestEven);
    slfp::encode(ctx, g.b, b, slfp::Rounding::NearestEven);
    const auto transpose = [](Op op) { return op == Op::N ? slfp::Transpose::No : slfp::Transpose::Yes; };
    const slfp::Matrix am{a, g.op_a == Op::N ? g.m : g.k, g.op_a == Op::N ? g.k : g.m, g.lda};
    const slfp::Matrix bm{b, g.op_b == Op::N ? g.k : g.n, g.op_b == Op::N ? g.n : g.k, g.ldb};
    slfp::gemm(ctx, transpose(g.op_a), transpose(g.op_b), g.alpha, am, bm, g.beta, g.c, g.ldc,
               base + a_bytes + b_bytes);
  }

  slfp::Format format_;
};

}  // namespace

void add_slfp_backends(std::vector<std::unique_ptr<Backend>>& out) {
  for (const slfp::Format f : slfp::all_formats())
    if (f != slfp::Format::Fp64 && f != slfp::Format::Fp32) out.push_back(std::make_unique<SlfpGemm>(f));
}

}  // namespace mixsolve::gemm

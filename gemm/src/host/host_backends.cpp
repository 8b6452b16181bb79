// SPDX-License-Identifier: BSD-3-Clause
// Host reference backends: FP64 and FP32 GEMM through Eigen, and the tensor-core model.
#include <Eigen/Core>

#include <memory>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "mixsolve/gemm/tc_model.hpp"

namespace mixsolve::gemm {

namespace {

template <class T>
using MatrixMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>, 0, Eigen::OuterStride<>>;
template <class T>
using ConstMatrixMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>, 0, Eigen::OuterStride<>>;

template <class T>
void eigen_gemm(const GemmArgs<T>& args) {
  const std::int64_t a_rows = args.op_a == Op::N ? args.m : args.k;
  const std::int64_t a_cols = args.op_a == Op::N ? args.k : args.m;
  const std::int64_t b_rows = args.op_b == Op::N ? args.k : args.n;
  const std::int64_t b_cols = args.op_b == Op::N ? args.n : args.k;
  ConstMatrixMap<T> a(args.a, a_rows, a_cols, Eigen::OuterStride<>(args.lda));
  ConstMatrixMap<T> b(args.b, b_rows, b_cols, Eigen::OuterStride<>(args.ldb));
  MatrixMap<T> c(args.c, args.m, args.n, Eigen::OuterStride<>(args.ldc));
  // Four products so that Eigen sees the transposes statically (no copies).
  auto product = [&](auto&& opa, auto&& opb) {
    if (args.beta == T(0)) c.noalias() = args.alpha * (opa * opb);
    else {
      c *= args.beta;
      c.noalias() += args.alpha * (opa * opb);
    }
  };
  if (args.op_a == Op::N && args.op_b == Op::N) product(a, b);
  else if (args.op_a == Op::N) product(a, b.transpose());
  else if (args.op_b == Op::N) product(a.transpose(), b);
  else product(a.transpose(), b.transpose());
}

class EigenFp64Backend final : public Backend {
 public:
  std::string name() const override { return "host-fp64"; }
  std::string description() const override { return "host DGEMM (Eigen), FP64 data: the reference"; }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Host; }

 protected:
  void run_f64(Context&, const GemmArgs<double>& args) const override { eigen_gemm(args); }
};

class EigenFp32Backend final : public Backend {
 public:
  std::string name() const override { return "host-fp32"; }
  std::string description() const override { return "host SGEMM (Eigen), FP32 data and FP32 arithmetic"; }
  DataType data_type() const override { return DataType::F32; }
  Memory memory() const override { return Memory::Host; }

 protected:
  void run_f32(Context&, const GemmArgs<float>& args) const override { eigen_gemm(args); }
};

class TcModelBackend final : public Backend {
 public:
  explicit TcModelBackend(TcModel model) : model_(model) {}
  std::string name() const override {
    return "model-" + to_string(model_.scheme) + (model_.accumulation == TcRounding::RZ ? "-rz" : "-rn");
  }
  std::string description() const override {
    const char* acc = model_.accumulation == TcRounding::RZ
                          ? "main product accumulated inside the tensor core (RZ, as the hardware)"
                          : "main product added outside the tensor core (RN)";
    return "host model of tensor-core " + to_string(model_.scheme) + " GEMM (Ootomo & Yokota 2021, §3.2 mma_" +
           (model_.accumulation == TcRounding::RZ ? "rz" : "rn") + "): " + acc;
  }
  DataType data_type() const override { return DataType::F32; }
  Memory memory() const override { return Memory::Host; }

 protected:
  void run_f32(Context&, const GemmArgs<float>& args) const override { tc_model_gemm(model_, args); }

 private:
  TcModel model_;
};

}  // namespace

void add_host_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<EigenFp64Backend>());
  out.push_back(std::make_unique<EigenFp32Backend>());
  for (TcScheme s : {TcScheme::Fp16, TcScheme::Bf16, TcScheme::Tf32, TcScheme::Markidis, TcScheme::Halfhalf, TcScheme::Tf32tf32,
                     TcScheme::Fp16x3})
    for (TcRounding r : {TcRounding::RZ, TcRounding::RN}) out.push_back(std::make_unique<TcModelBackend>(TcModel{s, r}));
}

}  // namespace mixsolve::gemm

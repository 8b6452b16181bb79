// SPDX-License-Identifier: BSD-3-Clause
// Small helpers for the benchmark and example programs: option parsing, device header, JSON rows.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mixsolve/core/error.hpp"
#include "mixsolve/core/gpu.hpp"
#include "mixsolve/gemm/evaluation.hpp"

namespace mixsolve::bench {

// "--name value" options; flags without a value are "true".
class Options {
 public:
  Options(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string key = argv[i];
      if (key.rfind("--", 0) != 0) throw InvalidArgument("unexpected argument \"" + key + "\" (options start with --)");
      key = key.substr(2);
      if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) values_.push_back({key, argv[++i]});
      else values_.push_back({key, "true"});
    }
  }
  std::string get(const std::string& key, const std::string& fallback) const {
    for (const auto& [k, v] : values_)
      if (k == key) return v;
    return fallback;
  }
  std::vector<std::string> list(const std::string& key, const std::string& fallback) const {
    std::vector<std::string> out;
    std::stringstream s(get(key, fallback));
    for (std::string item; std::getline(s, item, ',');)
      if (!item.empty()) out.push_back(item);
    return out;
  }
  std::vector<std::int64_t> sizes(const std::string& key, const std::string& fallback) const {
    std::vector<std::int64_t> out;
    for (const std::string& s : list(key, fallback)) {
      try {
        out.push_back(std::stoll(s));
      } catch (const std::exception&) {
        throw InvalidArgument("--" + key + ": \"" + s + "\" is not an integer");
      }
      if (out.back() <= 0) throw InvalidArgument("--" + key + ": " + s + " is not positive");
    }
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

// A GEMM's m x n x k.
struct Shape {
  std::int64_t m, n, k;
};

// The square sizes of --<sizes_key> (n x n x n) and the rectangular problems of --shapes
// ("MxNxK,...", e.g. the trailing updates of a blocked LU).
inline std::vector<Shape> shapes(const Options& opt, const std::string& sizes_key, const std::string& default_sizes) {
  std::vector<Shape> out;
  for (std::int64_t n : opt.sizes(sizes_key, default_sizes)) out.push_back({n, n, n});
  for (const std::string& s : opt.list("shapes", "")) {
    Shape sh{};
    if (std::sscanf(s.c_str(), "%ldx%ldx%ld", &sh.m, &sh.n, &sh.k) != 3 || sh.m <= 0 || sh.n <= 0 || sh.k <= 0)
      throw InvalidArgument("--shapes: \"" + s + "\" is not MxNxK with positive sizes");
    out.push_back(sh);
  }
  return out;
}

// Writes `out` to the file --json names, if it names one.
inline void write_json(const Options& opt, const nlohmann::json& out) {
  const std::string path = opt.get("json", "");
  if (path.empty()) return;
  std::ofstream(path) << out.dump(2) << "\n";
  std::printf("\nwrote %s\n", path.c_str());
}

inline nlohmann::json device_json() {
  nlohmann::json j;
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  j["date"] = date;
  if (!gpu_available()) {
    j["gpu"] = "none (host backends)";
    return j;
  }
  const DeviceInfo d = device_info();
  j["gpu"] = d.name;
  j["compute_capability"] = d.compute_capability;
  j["multiprocessors"] = d.multiprocessors;
  j["cuda_driver"] = d.driver_version;
  j["cuda_runtime"] = d.runtime_version;
  j["cublas"] = d.cublas_version;
  return j;
}

inline nlohmann::json to_json(const gemm::Evaluation& e) {
  nlohmann::json j{{"backend", e.backend}, {"input_class", e.input_class}, {"m", e.m}, {"n", e.n}, {"k", e.k},
                   {"relative_error", e.relative_error}, {"max_relative_error", e.max_relative_error},
                   {"nonfinite", e.nonfinite}, {"median_seconds", e.median_seconds}, {"tflops", e.tflops}};
  if (!e.error.empty()) j["error"] = e.error;
  return j;
}

}  // namespace mixsolve::bench

// SPDX-License-Identifier: BSD-3-Clause
// The examples' command line: "--name value" options and comma-separated lists.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace mixsolve_examples {

// The value after "--name", or `fallback`.
inline std::string option(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == "--" + name) return argv[i + 1];
  return fallback;
}

// "a,b,,c" -> {"a", "b", "c"}.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace mixsolve_examples

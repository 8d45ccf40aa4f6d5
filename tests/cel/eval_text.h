// Tables of selectors and what each gives, as text: upstream's library tests, ported case by case.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cel/program.h"

namespace devmgr::cel {

// EvalText: "true" or "false", "error: <the evaluation's error>" or "compile: <the compile
// error>" for `expression` compiled with the default options and evaluated for `device`.
inline std::string EvalText(const std::string& expression, const Device& device = {}) {
  absl::StatusOr<std::shared_ptr<const Program>> program = Program::Compile(expression);
  if (!program.ok()) return "compile: " + std::string(program.status().message());
  absl::StatusOr<bool> matched = (*program)->Matches(device);
  if (!matched.ok()) return "error: " + std::string(matched.status().message());
  return *matched ? "true" : "false";
}

struct EvalCase {
  // Upstream's name for the case.
  std::string name;
  std::string expression;
  // "true", "false", "error: <cel-go's text>", or, where upstream's table matches a part of the
  // text, "error with: <part>" or "compile: <part of the compile error>".
  std::string want;
};

// ExpectCases: each case's expression, evaluated for an empty device, gives what it wants.
inline void ExpectCases(const std::vector<EvalCase>& cases) {
  for (const EvalCase& c : cases) {
    const std::string got = EvalText(c.expression);
    bool part = false;
    for (const auto& [prefix, phase] :
         {std::pair<std::string, std::string>{"compile: ", "compile: "},
          {"error with: ", "error: "}}) {
      if (c.want.rfind(prefix, 0) != 0) continue;
      part = true;
      EXPECT_EQ(got.rfind(phase, 0), 0u) << c.name << ": " << got;
      EXPECT_NE(got.find(c.want.substr(prefix.size())), std::string::npos) << c.name << ": " << got;
    }
    if (!part) {
      EXPECT_EQ(got, c.want) << c.name << ": " << c.expression;
    }
  }
}

}  // namespace devmgr::cel

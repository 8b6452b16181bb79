// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// SolveOptions and LeastSquaresOptions as text, each from one table of its fields:
/// "precision=fp16x3,refinement=gmres" sets two fields and leaves the rest as they were; to_string
/// gives every field back in that form. The examples and benchmarks read solver options through it.
///
///   mixsolve::SolveOptions o = mixsolve::parse_solve_options("structure=spd,max-iterations=10");
///   mixsolve::LeastSquaresOptions l = mixsolve::parse_least_squares_options("refinement=gmres");
#pragma once

#include <string>
#include <vector>

#include "mixsolve/solvers/least_squares.hpp"
#include "mixsolve/solvers/solve.hpp"

namespace mixsolve {

/// One field of an options struct as text (solve_options.hpp and least_squares.hpp document each field).
struct OptionField {
  /// The name in text: the field's name with '-' for '_' ("max-iterations"; "precision" is the
  /// field factorization).
  std::string name;
  /// What it takes: the names it reads ("auto, fp64, ...") or a number's range.
  std::string values;
  /// A line on what it sets.
  std::string description;
};

/// Every field parse_solve_options reads, in SolveOptions' order (progress, a callback, is not
/// among them).
/// @return the table.
const std::vector<OptionField>& solve_option_fields();

/// Sets one field of `options` from text.
/// @param options the options to change.
/// @param name    a field's name (solve_option_fields()).
/// @param value   its value: a name the field reads, a number, "true" or "false" for a switch, a
///                list of precisions joined by '+' for auto-path ("fp16+fp32"), "inf" for an
///                infinite probe-pivot-ratio.
/// @throws InvalidArgument naming the field and the value where the name is no field's, the value
///                         is not of the field's kind or lies outside the field's range (the
///                         ranges Factorization's constructor checks).
void set_solve_option(SolveOptions& options, const std::string& name, const std::string& value);

/// Reads "name=value,name=value,..." (set_solve_option for each in turn) over `base`.
/// @param text  the fields to set, separated by ','; empty: none.
/// @param base  the options the text changes.
/// @return base with the fields set.
/// @throws InvalidArgument naming the item for an item without '=', and as set_solve_option.
SolveOptions parse_solve_options(const std::string& text, SolveOptions base = {});

/// Every field of the table in parse_solve_options' form; parse_solve_options(to_string(o)) gives
/// back o's fields (progress aside).
/// @param options the options.
/// @return "precision=auto,structure=general,...".
std::string to_string(const SolveOptions& options);

/// Every field parse_least_squares_options reads, in LeastSquaresOptions' order.
/// @return the table.
const std::vector<OptionField>& least_squares_option_fields();

/// Sets one field of `options` from text, as set_solve_option does for SolveOptions.
/// @param options the options to change.
/// @param name    a field's name (least_squares_option_fields()).
/// @param value   its value: a name the field reads, a number, "true" or "false", a GEMM
///                backend's name (fp32-update, fp32-vt-c-update: an FP32 backend of the gemm
///                registry; whether it runs in A's memory least_squares() checks) or "" for the
///                default.
/// @throws InvalidArgument naming the field and the value where the name is no field's, the value
///                         is not of the field's kind or lies outside its range.
void set_least_squares_option(LeastSquaresOptions& options, const std::string& name, const std::string& value);

/// Reads "name=value,name=value,..." (set_least_squares_option for each in turn) over `base`.
/// @param text the fields to set, separated by ','; empty: none.
/// @param base the options the text changes.
/// @return base with the fields set.
/// @throws InvalidArgument naming the item for an item without '=', and as set_least_squares_option.
LeastSquaresOptions parse_least_squares_options(const std::string& text, LeastSquaresOptions base = {});

/// Every field in parse_least_squares_options' form; parse_least_squares_options(to_string(o))
/// gives back o.
/// @param options the options.
/// @return "precision=fp32,max-iterations=30,...".
std::string to_string(const LeastSquaresOptions& options);

/// The name of a least-squares refinement, as parse_least_squares_refinement reads it.
/// @param r a refinement.
/// @return "augmented", "gmres", "augmented-then-gmres" or "cgls".
std::string to_string(LeastSquaresOptions::Refinement r);
/// Reads a least-squares refinement's name.
/// @param text "augmented", "gmres", "augmented-then-gmres" or "cgls" (exact, lower case).
/// @return the refinement.
/// @throws InvalidArgument for any other text.
LeastSquaresOptions::Refinement parse_least_squares_refinement(const std::string& text);

/// The name of a rank-deficiency rule, as parse_rank_deficiency reads it.
/// @param r a rule.
/// @return "minimum-norm" or "full-rank".
std::string to_string(LeastSquaresOptions::RankDeficiency r);
/// Reads a rank-deficiency rule's name.
/// @param text "minimum-norm" or "full-rank" (exact, lower case).
/// @return the rule.
/// @throws InvalidArgument for any other text.
LeastSquaresOptions::RankDeficiency parse_rank_deficiency(const std::string& text);

}  // namespace mixsolve

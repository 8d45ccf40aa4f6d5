// The strings extension's format(): `"%s has %d devices".format([name, count])`, as Kubernetes'
// environment has it (the extension at version 2, the locale en_US it leaves as the default),
// built with golang.org/x/text 0.23 or later as Kubernetes is: the clauses %s, %d, %f, %e, %b,
// %x, %X and %o, a precision (%.3f), %% for a percent sign, cel-go's error texts.
//
// Numbers follow what cel-go asks golang.org/x/text for, en_US's patterns included: %f groups
// the integer digits by thousands ("1,234.500000"), and its precision's digits beyond 255 are
// shown only where they are not trailing zeros; %e always shows six digits after the point, in
// the form 1.052033×10⁰³, and takes its "precision" as the least number of characters, filled
// with spaces in front; NaN and the infinities are "NaN", "∞" and "-∞". In lists and maps
// (%s), doubles are Go's %.6f without grouping, strings and bytes quoted as CEL literals, and
// map entries ordered by their keys' text.
//
// The checker runs what cel-go's format validator runs on a format written out with a list of
// arguments written out: the same walk, with the arguments' static types (FormatTakes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cel/functions.h"
#include "cel/types.h"
#include "cel/value.h"

namespace devmgr::cel {

// A clause's conversion, by its letter.
enum class FormatVerb {
  kString,      // %s
  kDecimal,     // %d
  kFixed,       // %f
  kScientific,  // %e
  kBinary,      // %b
  kHex,         // %x
  kHexUpper,    // %X
  kOctal,       // %o
};

// FormatClauseError: cel-go's text for a clause given a value of a type it does not take
// ("decimal clause can only be used on integers, was given double").
std::string FormatClauseError(FormatVerb verb, absl::string_view type_name);

// FormatTakes: whether a clause takes values of static type `kind` (a list or map whatever its
// items, as cel-go's validator compares kinds). Dynamic types are taken (their values are
// checked when formatted); %s's list and map literals have their items checked one by one.
bool FormatTakes(FormatVerb verb, Type::Kind kind);

// WalkFormat reads `format` as format() does, in order: each character of text (a "%%" as
// "%") goes to `text`, each clause to `clause` with the index of the argument it takes, its
// verb and its precision, and the first error ends the walk: the format's own, or the clause's
// (not OK), with cel-go's prefix ("error during formatting: ..."). `arguments` is how many
// there are. `checking` orders a clause that ends the text before a missing argument, as the
// validator does; format() itself finds the argument missing first.
absl::Status WalkFormat(
    absl::string_view format, size_t arguments, bool checking,
    absl::FunctionRef<void(absl::string_view)> text,
    absl::FunctionRef<absl::Status(size_t, FormatVerb, std::optional<int64_t>)> clause);

// StringFormat: format(), the overload string.format(list) of functions.h. Each value it
// formats, nested ones included, costs one, and each ten characters it writes one more.
Value StringFormat(const std::vector<Value>& args, EvalContext& context);

}  // namespace devmgr::cel

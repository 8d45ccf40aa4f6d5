// cel-go's lists extension (version 3, which Kubernetes' CEL environment has since 1.34) in
// selectors: upstream's TestLists and TestListsRuntimeErrors (cel-go ext/lists_test.go), case by
// case. Kubernetes' environment takes list literals of one element type only, so the cases whose
// literals mix types give every item as dyn(); the cases over protocol buffer messages
// (ExampleType) are left out.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "tests/cel/eval_text.h"

namespace devmgr::cel {
namespace {

TEST(CelListsExtensionTest, TestLists) {
  ExpectCases({
      {"range", "lists.range(4) == [0,1,2,3]", "true"},
      {"range empty", "lists.range(0) == []", "true"},
      {"reverse", "[5,1,2,3].reverse() == [3,2,1,5]", "true"},
      {"reverse empty", "[].reverse() == []", "true"},
      {"reverse one", "[1].reverse() == [1]", "true"},
      {"reverse strings",
       "['are', 'you', 'as', 'bored', 'as', 'I', 'am'].reverse() == "
       "['am', 'I', 'as', 'bored', 'as', 'you', 'are']",
       "true"},
      {"reverse twice", "[false, true, true].reverse().reverse() == [false, true, true]", "true"},
      {"slice all", "[1,2,3,4].slice(0, 4) == [1,2,3,4]", "true"},
      {"slice none at 0", "[1,2,3,4].slice(0, 0) == []", "true"},
      {"slice none at 1", "[1,2,3,4].slice(1, 1) == []", "true"},
      {"slice none at the end", "[1,2,3,4].slice(4, 4) == []", "true"},
      {"slice middle", "[1,2,3,4].slice(1, 3) == [2, 3]", "true"},
      {"slice backwards", "[1,2,3,4].slice(3, 0) == []",
       "error: cannot slice(3, 0), start index must be less than or equal to end index"},
      {"slice past the end", "[1,2,3,4].slice(0, 10) == []",
       "error: cannot slice(0, 10), list is length 4"},
      {"slice negative start", "[1,2,3,4].slice(-5, 10) == []",
       "error: cannot slice(-5, 10), negative indexes not supported"},
      {"slice negative", "[1,2,3,4].slice(-5, -3) == []",
       "error: cannot slice(-5, -3), negative indexes not supported"},
      {"flatten empty", "dyn([]).flatten() == []", "true"},
      {"flatten flat", "dyn([1,2,3,4]).flatten() == [1,2,3,4]", "true"},
      {"flatten one level",
       "[dyn(1),dyn([dyn(2),dyn([3,4])])].flatten() == [dyn(1),dyn(2),dyn([3,4])]", "true"},
      {"flatten empty lists", "[[1,2],[],[],[3,4]].flatten() == [1,2,3,4]", "true"},
      {"flatten two levels", "[dyn(1),dyn([dyn(2),dyn([3,4])])].flatten(2) == [1,2,3,4]", "true"},
      {"flatten negative", "[dyn(1),dyn([dyn(2),dyn([dyn(3),dyn([4])])])].flatten(-1) == [1,2,3,4]",
       "error: level must be non-negative"},
      {"sort empty", "[].sort() == []", "true"},
      {"sort one", "[1].sort() == [1]", "true"},
      {"sort ints", "[4, 3, 2, 1].sort() == [1, 2, 3, 4]", "true"},
      {"sort strings", "[\"d\", \"a\", \"b\", \"c\"].sort() == [\"a\", \"b\", \"c\", \"d\"]",
       "true"},
      {"sort mixed",
       "[dyn(\"d\"), dyn(3), dyn(2), dyn(\"c\")].sort() == [\"a\", \"b\", \"c\", \"d\"]",
       "error: list elements must have the same type"},
      {"sortBy empty", "[].sortBy(e, e) == []", "true"},
      {"sortBy one", "[\"a\"].sortBy(e, e) == [\"a\"]", "true"},
      {"sortBy key", "[-3, 1, -5, -2, 4].sortBy(e, -(e * e)) == [-5, 4, -3, -2, 1]", "true"},
      {"sortBy after map",
       "[-3, 1, -5, -2, 4].map(e, e * 2).sortBy(e, -(e * e)) == [-10, 8, -6, -4, 2]", "true"},
      {"sortBy range", "lists.range(3).sortBy(e, -e) == [2, 1, 0]", "true"},
      {"sortBy condition",
       "[\"a\", \"c\", \"b\", \"first\"].sortBy(e, e == \"first\" ? \"\" : e) == "
       "[\"first\", \"a\", \"b\", \"c\"]",
       "true"},
      {"distinct empty", "[].distinct() == []", "true"},
      {"distinct one", "[1].distinct() == [1]", "true"},
      {"distinct ints", "[-2, 5, -2, 1, 1, 5, -2, 1].distinct() == [-2, 5, 1]", "true"},
      {"distinct strings", "['c', 'a', 'a', 'b', 'a', 'b', 'c', 'c'].distinct() == ['c', 'a', 'b']",
       "true"},
      {"distinct mixed",
       "[dyn(1), dyn(2.0), dyn(\"c\"), dyn(3), dyn(\"c\"), dyn(1)].distinct() == "
       "[dyn(1), dyn(2.0), dyn(\"c\"), dyn(3)]",
       "true"},
      {"distinct numbers", "[dyn(1), dyn(1.0), dyn(2)].distinct() == [1, 2]", "true"},
      {"distinct lists", "[[1], [1], [2]].distinct() == [[1], [2]]", "true"},
  });
}

TEST(CelListsExtensionTest, TestListsRuntimeErrors) {
  ExpectCases({
      {"flatten of a map", "dyn({}).flatten() == []", "error with: no such overload"},
      {"flatten of a map to a level", "dyn({}).flatten(0) == []", "error with: no such overload"},
      {"flatten to a negative level", "[].flatten(-1) == []", "error: level must be non-negative"},
      {"flatten to a string level", "[].flatten(dyn('1')) == []", "error with: no such overload"},
  });
}

// What the checker refuses, as cel-go's declarations do, and what the extension's cost pays for.
TEST(CelListsExtensionTest, DeclarationsAndCost) {
  ExpectCases({
      {"flatten of a flat list", "[1, 2].flatten() == [1, 2]",
       "compile: found no matching overload for 'flatten' applied to 'list(int).()'"},
      {"sort of maps", "[{1: 2}].sort() == []",
       "compile: found no matching overload for 'sort' applied to 'list(map(int, int)).()'"},
      {"sortBy a map key", "[1, 2].sortBy(e, {e: e}) == [1, 2]",
       "compile: found no matching overload for '@sortByAssociatedKeys' applied to "
       "'list(int).(list(map(int, int)))'"},
      {"sortBy of a literal", "1.sortBy(e, e) == [1]",
       "compile: sortBy can only be applied to a list, identifier, comprehension, call or select "
       "expression"},
      {"sortBy of a map at run time", "dyn({1: 2}).sortBy(e, e) == [1]", "error: no such overload"},
      {"sort keeps the type", "[3, 1, 2].sort()[0] + 1 == 2", "true"},
      {"sort of bools, doubles, bytes",
       "[true, false].sort() == [false, true] && [2.5, -1.0].sort() == [-1.0, 2.5] && "
       "[b'b', b'a'].sort() == [b'a', b'b']",
       "true"},
      {"sort of dyn items", "[dyn(2), dyn(1)].sort() == [1, 2]", "true"},
      {"sort of NaN", "[1.0, 0.0 / 0.0].sort() == [1.0]", "error: NaN values cannot be ordered"},
      {"sortBy keeps equal keys in order",
       "['bb', 'a', 'cc', 'b'].sortBy(e, size(e)) == ['a', 'b', 'bb', 'cc']", "true"},
      {"range past the cost limit", "size(lists.range(10000000)) > 0",
       "error: operation cancelled: actual cost limit exceeded"},
      {"flatten of a shared list past the cost limit",
       "cel.bind(a, lists.range(1000), cel.bind(b, [a, a, a, a, a, a, a, a, a, a], "
       "cel.bind(c, [b, b, b, b, b, b, b, b, b, b], cel.bind(d, [c, c, c, c, c, c, c, c, c, c], "
       "size(d.flatten(3)) > 0))))",
       "error: operation cancelled: actual cost limit exceeded"},
  });
}

// A charge estimated before the work can be far past any limit (an index near 2^63, a product
// of two sizes): the evaluation stops, and its cost is counted just past the limit, neither the
// estimate nor a count wrapped around past 2^64.
TEST(CelListsExtensionTest, AChargeFarPastTheLimitCountsJustPastIt) {
  for (const char* expression : {
           "size(lists.range(9223372036854775807)) > 0",
           "size([dyn(1)].flatten(9223372036854775807)) > 0",
           "size([dyn(1)].flatten(9223372036854775807)) + size([dyn(1)]"
           ".flatten(9223372036854775807)) > 0",
           "sets.contains(lists.range(40000), lists.range(40000))",
       }) {
    CompileOptions options;
    options.cost_limit = 100'000;
    absl::StatusOr<std::shared_ptr<const Program>> program = Program::Compile(expression, options);
    ASSERT_TRUE(program.ok()) << program.status();
    uint64_t cost = 0;
    absl::StatusOr<bool> matched = (*program)->Matches(Device{}, &cost);
    EXPECT_EQ(matched.status().message(), "operation cancelled: actual cost limit exceeded")
        << expression;
    // One past the limit for the step that passed it, and one for each step after it.
    EXPECT_GT(cost, 100'000u) << expression;
    EXPECT_LT(cost, 100'010u) << expression;
  }
}

}  // namespace
}  // namespace devmgr::cel

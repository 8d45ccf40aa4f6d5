// cel-go's two-variable comprehensions (Kubernetes' environment has them since 1.32) in
// selectors: upstream's TestTwoVarComprehensions, TestTwoVarComprehensionsStaticErrors and
// TestTwoVarComprehensionsRuntimeErrors (cel-go ext/comprehensions_test.go), case by case. Left
// out: the cases that call what Kubernetes' environment lacks (the strings extension's
// reverse(), optMap, optional map entries) or bind variables of their own; literals that mix
// types give every item as dyn(), as Kubernetes' environment requires.
#include <gtest/gtest.h>

#include "tests/cel/eval_text.h"

namespace devmgr::cel {
namespace {

TEST(CelTwoVarComprehensionsTest, TestTwoVarComprehensions) {
  ExpectCases({
      {"list all", "[1, 2, 3, 4].all(i, v, i < 5 && v > 0)", "true"},
      {"list all index below item", "[1, 2, 3, 4].all(i, v, i < v)", "true"},
      {"list all index above item", "[1, 2, 3, 4].all(i, v, i > v) == false", "true"},
      {"list all against another",
       "cel.bind(listA, [1, 2, 3, 4], cel.bind(listB, [1, 2, 3, 4, 5], "
       "listA.all(i, v, listB[?i].hasValue() && listB[i] == v)))",
       "true"},
      {"list all against a shorter one",
       "cel.bind(listA, [1, 2, 3, 4, 5, 6], cel.bind(listB, [1, 2, 3, 4, 5], "
       "listA.all(i, v, listB[?i].hasValue() && listB[i] == v))) == false",
       "true"},
      {"list transformList formatted",
       "['Hello', 'world'].transformList(i, v, \"[%d]%s\".format([i, v.lowerAscii()])) == "
       "[\"[0]hello\", \"[1]world\"]",
       "true"},
      {"list transformList formatted and filtered",
       "['hello', 'world'].transformList(i, v, v.startsWith('greeting'), "
       "\"[%d]%s\".format([i, v])) == []",
       "true"},
      {"list transformList",
       "[1, 2, 3].transformList(indexVar, valueVar, (indexVar * valueVar) + valueVar) == "
       "[1, 4, 9]",
       "true"},
      {"list transformList filtered",
       "[1, 2, 3].transformList(indexVar, valueVar, indexVar % 2 == 0, "
       "(indexVar * valueVar) + valueVar) == [1, 9]",
       "true"},
      {"list transformMap",
       "['Hello', 'world'].transformMap(i, v, [v.lowerAscii()]) == {0: ['hello'], 1: ['world']}",
       "true"},
      {"list transformMap round trip",
       "['world', 'Hello'].transformMap(i, v, [v.lowerAscii()]).transformList(k, v, v).flatten()"
       ".sort() == ['hello', 'world']",
       "true"},
      {"list transformMap of indexes",
       "[1, 2, 3].transformMap(indexVar, valueVar, (indexVar * valueVar) + valueVar) == "
       "{0: 1, 1: 4, 2: 9}",
       "true"},
      {"list transformMap filtered",
       "[1, 2, 3].transformMap(indexVar, valueVar, indexVar % 2 == 0, "
       "(indexVar * valueVar) + valueVar) == {0: 1, 2: 9}",
       "true"},
      {"list transformMapEntry",
       "\"key1:value1 key2:value2 key3:value3\".split(\" \").transformMapEntry(i, v, "
       "cel.bind(entry, v.split(\":\"), entry.size() == 2 ? {entry[0]: entry[1]} : {})) == "
       "{'key1': 'value1', 'key2': 'value2', 'key3': 'value3'}",
       "true"},
      {"map all",
       "{'hello': 'world', 'hello!': 'world'}.all(k, v, k.startsWith('hello') && v == 'world')",
       "true"},
      {"map all false",
       "{'hello': 'world', 'hello!': 'worlds'}.all(k, v, k.startsWith('hello') && "
       "v.endsWith('world')) == false",
       "true"},
      {"map exists",
       "{'hello': 'world', 'hello!': 'worlds'}.exists(k, v, k.startsWith('hello') && "
       "v.endsWith('world'))",
       "true"},
      {"map existsOne",
       "{'hello': 'world', 'hello!': 'worlds'}.existsOne(k, v, k.startsWith('hello') && "
       "v.endsWith('world'))",
       "true"},
      {"map exists_one",
       "{'hello': 'world', 'hello!': 'worlds'}.exists_one(k, v, k.startsWith('hello') && "
       "v.endsWith('world'))",
       "true"},
      {"map exists_one false",
       "{'hello': 'world', 'hello!': 'wow, world'}.exists_one(k, v, k.startsWith('hello') && "
       "v.endsWith('world')) == false",
       "true"},
      {"map transformList formatted",
       "{'Hello': 'world'}.transformList(k, v, \"%s=%s\".format([k.lowerAscii(), v])) == "
       "[\"hello=world\"]",
       "true"},
      {"dyn map transformList formatted",
       "dyn({'Hello': 'world'}).transformList(k, v, \"%s=%s\".format([k.lowerAscii(), v])) == "
       "[\"hello=world\"]",
       "true"},
      {"map transformList formatted and filtered",
       "{'hello': 'world'}.transformList(k, v, k.startsWith('greeting'), "
       "\"%s=%s\".format([k, v])) == []",
       "true"},
      {"map transformMap formatted",
       "{'hello': 'world', 'goodbye': 'cruel world'}.transformMap(k, v, "
       "\"%s, %s!\".format([k, v])) == "
       "{'hello': 'hello, world!', 'goodbye': 'goodbye, cruel world!'}",
       "true"},
      {"dyn map transformMap formatted",
       "dyn({'hello': 'world', 'goodbye': 'cruel world'}).transformMap(k, v, "
       "\"%s, %s!\".format([k, v])) == "
       "{'hello': 'hello, world!', 'goodbye': 'goodbye, cruel world!'}",
       "true"},
      {"map transformMap formatted and filtered",
       "{'hello': 'world', 'goodbye': 'cruel world'}.transformMap(k, v, v.startsWith('world'), "
       "\"%s, %s!\".format([k, v])) == {'hello': 'hello, world!'}",
       "true"},
      {"map transformList of keys",
       "{'greeting': 'hello', 'farewell': 'goodbye'}.transformList(k, _, k).sort() == "
       "['farewell', 'greeting']",
       "true"},
      {"map transformList of values",
       "{'greeting': 'hello', 'farewell': 'goodbye'}.transformList(_, v, v).sort() == "
       "['goodbye', 'hello']",
       "true"},
      {"map transformMapEntry to nothing",
       "{'hello': 'world', 'greetings': 'tacocat'}.transformMapEntry(k, v, {}) == {}", "true"},
  });
}

TEST(CelTwoVarComprehensionsTest, TestTwoVarComprehensionsStaticErrors) {
  ExpectCases({
      {"duplicate", "[].all(i, i, i < i)", "compile: duplicate variable name: i"},
      {"accumulator first", "[].all(__result__, i, __result__ < i)",
       "compile: iteration variable overwrites accumulator variable"},
      {"accumulator second", "[].all(j, __result__, __result__ < j)",
       "compile: iteration variable overwrites accumulator variable"},
      {"all first not a name", "[].all(i.j, k, i.j < k)",
       "compile: argument must be a simple name"},
      {"all second not a name", "[].all(j, i.k, j < i.k)",
       "compile: argument must be a simple name"},
      {"all of an int", "1.all(j, k, j < k)", "compile: cannot be range"},
      {"exists first not a name", "[].exists(i.j, k, i.j < k)",
       "compile: argument must be a simple name"},
      {"exists second not a name", "[].exists(j, i.k, j < i.k)",
       "compile: argument must be a simple name"},
      {"exists of a string", "''.exists(j, k, j < k)", "compile: cannot be range"},
      {"exists_one first not a name", "[].exists_one(i.j, k, i.j < k)",
       "compile: argument must be a simple name"},
      {"existsOne second not a name", "[].existsOne(j, i.k, j < i.k)",
       "compile: argument must be a simple name"},
      {"existsOne of a string", "''.existsOne(j, k, j < k)", "compile: cannot be range"},
      {"transformList first not a name", "[].transformList(i.j, k, i.j + k) == []",
       "compile: argument must be a simple name"},
      {"transformList second not a name", "[].transformList(j, i.k, j + i.k) == []",
       "compile: argument must be a simple name"},
      {"transformMap first not a name", "{}.transformMap(i.j, k, i.j + k) == {}",
       "compile: argument must be a simple name"},
      {"transformMap second not a name", "{}.transformMap(j, i.k, j + i.k) == {}",
       "compile: argument must be a simple name"},
      {"transformMapEntry second not a name", "{}.transformMapEntry(j, i.k, {j: i.k}) == {}",
       "compile: argument must be a simple name"},
      {"transformMapEntry first not a name", "{}.transformMapEntry(i.j, k, {k: i.j}) == {}",
       "compile: argument must be a simple name"},
      {"bad filter", "{}.transformMapEntry(j, k, 'bad filter', {k: j}) == {}",
       "compile: no matching overload"},
      {"branches of two types", "[1, 2].transformList(i, v, v % 2 == 0 ? [v] : v) == []",
       "compile: no matching overload"},
      {"entry not a map",
       "{'hello': 'world', 'greetings': 'tacocat'}.transformMapEntry(k, v, []) == {}",
       "compile: no matching overload"},
  });
}

TEST(CelTwoVarComprehensionsTest, TestTwoVarComprehensionsRuntimeErrors) {
  ExpectCases({
      {"a key twice", "[1, 1].transformMapEntry(i, v, {v: i}) == {}",
       "error: insert failed: key 1 already exists"},
      {"a key twice across types", "[dyn(0), dyn(0u)].transformMapEntry(i, v, {v: i}) == {}",
       "error: insert failed: key 0 already exists"},
      {"an entry that is not a map", "[1].transformMapEntry(i, v, dyn(v)) == {}",
       "error with: no such overload"},
  });
}

// In a selector: a device's attributes of one domain, a map, with their names and values.
TEST(CelTwoVarComprehensionsTest, OverADevicesAttributes) {
  Device device;
  device.driver = "gpu.example.com";
  device.attributes["gpu.example.com/model"] = Value::String("a100");
  device.attributes["gpu.example.com/memoryGiB"] = Value::Int(80);
  EXPECT_EQ(EvalText("device.attributes['gpu.example.com'].exists(name, value, name == 'model' && "
                     "value == 'a100')",
                     device),
            "true");
  EXPECT_EQ(EvalText("device.attributes['gpu.example.com'].transformList(name, value, name)"
                     ".sort() == ['memoryGiB', 'model']",
                     device),
            "true");
}

}  // namespace
}  // namespace devmgr::cel

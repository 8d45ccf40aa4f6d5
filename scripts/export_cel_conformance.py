#!/usr/bin/env python3
"""Exports cel-spec's simple conformance tests as JSON test data for devmgr's CEL evaluator.

Usage: export_cel_conformance.py TESTDATA_DIR > tests/cel/testdata/conformance.json

TESTDATA_DIR is google/cel-spec's tests/simple/testdata: one SimpleTestFile
(proto/cel/expr/conformance/test/simple.proto) per *.textproto file. This script reads the small
part of the protobuf text format those files use, and writes every test of every file, in file
name order, as {"name": "file/section/test", "expr", "value" or "error", "disable_check"?,
"skip"?}. Upstream repeats a few names within a section; the second of a name is "name#2".

A value is typed, one key per CEL type: {"null": null}, {"bool": b}, {"int": n}, {"uint": n},
{"double": x} (x a number, or "NaN", "Infinity", "-Infinity"), {"string": s}, {"bytes": base64},
{"list": [values]}, {"map": [[key, value], ...]}, {"type": name} (a type value: "int",
"list", "null_type", "net.IP"). A typed_result gives its value (its deduced
type is not exported); a test with no result expects true, as simple.proto says. An expected
error is the list of texts cel-spec gives ("error"), which are often prose rather than an
implementation's message.

A test is in devmgr's subset (cel/program.h: one expression, type-checked, over the variable
`device` only) unless it needs something the subset does not have; then "skip" names that
construct (protocol buffer messages, a function cel/functions.h does not have, the type
denotation dyn, variables the test binds, evaluation without a checker, ...), so that the tests report every
skipped case and why. The rules are skip_reason's, below; they look at the language a test
uses, never at whether devmgr happens to pass it.

It is run by hand when upstream's files change; the JSON it wrote is what the tests read.
"""

import base64
import json
import math
import os
import re
import sys

# ---------------------------------------------------------------------------------------------
# The protobuf text format, as these files use it: fields `name: value`, `name { ... }` or
# `name: { ... }`, repeated by repetition; strings in either quote with C escapes, adjacent
# strings joined; numbers, enum names, `[a, b]` lists, and `[type.googleapis.com/T] { ... }`
# expanded Any values.


TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>\#[^\n]*)|"""
    r"""(?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|"""
    r"""(?P<num>-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[fFuU]?)|"""
    r"""(?P<ident>-?[A-Za-z_][A-Za-z_0-9]*)|"""
    r"""(?P<op>[{}<>\[\]:,;/.])""",
    re.S,
)

SIMPLE_ESCAPES = {
    "a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11,
    "\\": 92, "'": 39, '"': 34, "?": 63,
}


def unescape(body):
    """The bytes a quoted text-format string (without its quotes) stands for."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in SIMPLE_ESCAPES:
            out.append(SIMPLE_ESCAPES[e])
        elif e in "01234567":
            digits = e
            while len(digits) < 3 and i < len(body) and body[i] in "01234567":
                digits += body[i]
                i += 1
            out.append(int(digits, 8) & 0xFF)
        elif e in "xX":
            digits = ""
            while len(digits) < 2 and i < len(body) and body[i] in "0123456789abcdefABCDEF":
                digits += body[i]
                i += 1
            out.append(int(digits, 16))
        elif e in "uU":
            n = 4 if e == "u" else 8
            out += chr(int(body[i:i + n], 16)).encode("utf-8")
            i += n
        else:
            raise SyntaxError(f"unknown escape \\{e} in {body!r}")
    return bytes(out)


def tokenize(text):
    out = []
    pos = 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise SyntaxError(f"cannot read {text[pos:pos + 40]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind in ("ws", "comment"):
            continue
        value = m.group(kind)
        if kind == "str":
            value = unescape(value[1:-1])
            if out and out[-1][0] == "str":  # "a" "b" is "ab"
                out[-1] = ("str", out[-1][1] + value)
                continue
        out.append((kind, value))
    out.append(("eof", None))
    return out


class Message:
    """A message's fields in the order written: a name may repeat (a repeated field)."""

    def __init__(self):
        self.fields = []

    def all(self, name):
        return [v for n, v in self.fields if n == name]

    def get(self, name, default=None):
        values = self.all(name)
        return values[-1] if values else default

    def has(self, name):
        return any(n == name for n, _ in self.fields)

    def names(self):
        return [n for n, _ in self.fields]


class Scalar:
    """A scalar as written: a string's bytes, or the text of a number or an enum name."""

    def __init__(self, kind, value):
        self.kind = kind
        self.value = value

    def text(self):
        if self.kind != "str":
            raise TypeError(f"expected a string, got {self.value!r}")
        return self.value.decode("utf-8")

    def bytes(self):
        return self.value

    def integer(self):
        if self.kind != "num":
            raise TypeError(f"expected an integer, got {self.value!r}")
        return int(self.value.rstrip("uU"), 0)

    def double(self):
        text = self.value.rstrip("fF") if self.kind == "num" else self.value
        lowered = text.lower()
        if lowered in ("inf", "infinity"):
            return math.inf
        if lowered in ("-inf", "-infinity"):
            return -math.inf
        if lowered in ("nan", "-nan"):
            return math.nan
        return float(text)

    def boolean(self):
        if self.value in ("true", "True", "t", "1"):
            return True
        if self.value in ("false", "False", "f", "0"):
            return False
        raise TypeError(f"expected a bool, got {self.value!r}")


class TextParser:
    def __init__(self, tokens):
        self.tokens = tokens
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos]

    def next(self):
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def accept(self, op):
        if self.peek() == ("op", op):
            self.pos += 1
            return True
        return False

    def message(self, close):
        msg = Message()
        while not self.accept(close):
            if self.peek()[0] == "eof" and close is None:
                return msg
            msg.fields.append(self.field())
            if not self.accept(","):
                self.accept(";")
        return msg

    def field(self):
        if self.accept("["):
            # An extension or an expanded Any: [type.googleapis.com/pkg.Type].
            name = "["
            while not self.accept("]"):
                name += str(self.next()[1])
            name += "]"
        else:
            kind, name = self.next()
            if kind != "ident":
                raise SyntaxError(f"expected a field name, got {name!r}")
        colon = self.accept(":")
        if self.peek() in (("op", "{"), ("op", "<")):
            return name, self.value()
        if not colon:
            raise SyntaxError(f"expected ':' after {name}")
        if self.accept("["):
            items = []
            while not self.accept("]"):
                items.append(self.value())
                self.accept(",")
            return name, items
        return name, self.value()

    def value(self):
        if self.accept("{"):
            return self.message("}")
        if self.accept("<"):
            return self.message(">")
        kind, value = self.next()
        if kind not in ("str", "num", "ident"):
            raise SyntaxError(f"expected a value, got {value!r}")
        return Scalar(kind, value)


def read_textproto(text):
    return TextParser(tokenize(text)).message(None)


# ---------------------------------------------------------------------------------------------
# cel.expr.Value to typed JSON. Values outside the subset raise OutOfSubset.


class OutOfSubset(Exception):
    pass


def export_value(v):
    if not isinstance(v, Message) or len(v.fields) != 1:
        if isinstance(v, Message) and not v.fields:
            raise SyntaxError("an empty Value")
        raise SyntaxError("a Value must set exactly one field")
    kind, x = v.fields[0]
    if kind == "null_value":
        return {"null": None}
    if kind == "bool_value":
        return {"bool": x.boolean()}
    if kind == "int64_value":
        return {"int": x.integer()}
    if kind == "uint64_value":
        return {"uint": x.integer()}
    if kind == "double_value":
        d = x.double()
        if math.isnan(d):
            return {"double": "NaN"}
        if math.isinf(d):
            return {"double": "Infinity" if d > 0 else "-Infinity"}
        return {"double": d}
    if kind == "string_value":
        return {"string": x.text()}
    if kind == "bytes_value":
        return {"bytes": base64.b64encode(x.bytes()).decode("ascii")}
    if kind == "list_value":
        return {"list": [export_value(item) for item in x.all("values")]}
    if kind == "map_value":
        return {"map": [[export_value(e.get("key")), export_value(e.get("value"))]
                        for e in x.all("entries")]}
    if kind == "enum_value":
        raise OutOfSubset("an enum value result")
    if kind == "object_value":
        type_names = [n for n in x.names() if n.startswith("[")]
        name = type_names[0][1:-1].split("/")[-1] if type_names else "a message"
        raise OutOfSubset(f"a protocol buffer message result ({name})")
    if kind == "type_value":
        return {"type": x.text()}
    raise SyntaxError(f"unknown Value field {kind}")


def error_texts(error_set):
    return [e.get("message").text() if e.has("message") else "" for e in error_set.all("errors")]


# ---------------------------------------------------------------------------------------------
# The subset. A case is outside it when its expression uses a construct the subset does not have,
# when it needs something of the test harness the subset has no place for (variables, a
# container, unchecked evaluation), or when its result is a kind of value the subset has not.

# The functions of the subset: cel/functions.h's table, and parser.h's macros.
SUBSET_FUNCTIONS = {
    "add", "asApproximateFloat", "asInteger", "bool", "bytes", "charAt", "compareTo", "contains",
    "double", "dyn", "endsWith", "find", "findAll", "hasValue", "includes", "indexOf", "int",
    "isGreaterThan", "isInteger", "isLessThan", "isQuantity", "isSemver", "join", "lastIndexOf",
    "lowerAscii", "major", "matches", "minor", "optional.none", "optional.of",
    "optional.ofNonZeroValue", "or", "orValue", "patch", "quantity", "replace", "reverse",
    "semver", "sign", "size", "split", "startsWith", "string", "sub", "substring", "trim", "uint",
    "upperAscii", "value", "type", "strings.quote", "format",
    # Kubernetes' IP and CIDR libraries.
    "cidr", "containsCIDR", "containsIP", "family", "ip", "ip.isCanonical", "isCIDR", "isIP",
    "isGlobalUnicast", "isLinkLocalMulticast", "isLinkLocalUnicast", "isLoopback",
    "isUnspecified", "masked", "prefixLength",
    # cel-go's lists extension.
    "distinct", "flatten", "lists.range", "slice", "sort",
    # Macros, cel-go's two-variable comprehensions among them.
    "has", "all", "exists", "exists_one", "map", "filter", "sortBy", "cel.bind", "existsOne",
    "transformList", "transformMap", "transformMapEntry",
}

# Functions outside the subset, by the library that has them (for the reason's text).
LIBRARIES = [
    (re.compile(r"^(timestamp|duration|get(Date|DayOfMonth|DayOfWeek|DayOfYear|FullYear|Hours|"
                r"Milliseconds|Minutes|Month|Seconds))$"), "timestamps and durations"),
    (re.compile(r"^math\."), "cel-go's math extension"),
    (re.compile(r"^base64\."), "cel-go's encoders extension"),
    (re.compile(r"^cel\.(block|index|iterVar)$"), "cel-go's block extension"),
    (re.compile(r"^(ip|cidr|isIP|isCIDR|ip\.isCanonical|containsIP|containsCIDR|family|"
                r"isGlobalUnicast|isLinkLocalMulticast|isLinkLocalUnicast|isLoopback|"
                r"isUnspecified|masked|prefixLength)$"), "the network extension (IP and CIDR)"),
    (re.compile(r"^proto\.(hasExt|getExt)$"), "protocol buffer extensions"),
    (re.compile(r"^(optMap|optFlatMap)$"), "the optional library's macros"),
]

# cel-spec's format() is the strings extension's from version 4; Kubernetes' environment has
# version 2, whose numbers are golang.org/x/text's (cel/string_format.h).
FORMAT_VERSION = ("format() of the strings extension from version 4, as cel-spec specifies it; "
                  "Kubernetes' environment has version 2 (tests/cel/string_format_test.cc)")

# The names of CEL's types, values of type `type` where they are not called.
TYPE_NAMES = ("bool", "bytes", "double", "int", "list", "map", "null_type", "string", "type",
              "uint", "dyn", "optional_type")

# Namespaces whose functions are called by qualified name (`math.greatest(...)`).
NAMESPACES = ("optional", "math", "sets", "strings", "cel", "base64", "proto", "ip", "lists")

# The subset's types with a qualified name (types.h's TypeDenotation), values where written out.
QUALIFIED_TYPES = re.compile(r"(?<![\w.])(net\.(IP|CIDR)|kubernetes\.(Semver|Quantity))\b")

KEYWORDS = {"true", "false", "null", "in"}

# Cases cel-spec evaluates without type-checking (disable_check) that a checker refuses, by the
# construct a checker refuses. devmgr always checks (Program::Compile), so they are outside its
# subset; the other disable_check cases are checked and run. (A disable_check case that expects
# an error runs: a checker's refusal is an error too.)
UNCHECKED = {
    "logic/AND/short_circuit_type_left": "an int operand of && (needs unchecked evaluation)",
    "logic/AND/short_circuit_type_right": "a string operand of && (needs unchecked evaluation)",
    "logic/OR/short_circuit_type_left": "an int operand of || (needs unchecked evaluation)",
    "logic/OR/short_circuit_type_right": "a string operand of || (needs unchecked evaluation)",
}

# Cases of cel-spec's network_ext, which tests cel-go's network extension, where Kubernetes' IP
# library (DRA selectors', and the subset's) answers otherwise, by what differs.
KUBERNETES_DIFFERS = {
    name: "an IPv4-mapped IPv6 address written in hex (::ffff:c0a8:1), which cel-go's network "
          "extension takes as its IPv4 address and Kubernetes' ip() refuses, as it does every "
          "IPv4-mapped address"
    for name in ("network_ext/ipv4/ipv4_equals_ipv6", "network_ext/ipv4/ipv4_not_equals_ipv6")
} | {
    name: "an offset past the end of the string, for which cel-go's strings extension (0.26, as "
          "Kubernetes builds it) answers -1 where cel-spec expects an error (cel-go's own "
          "conformance run skips this case)"
    for name in ("string_ext/value_errors/indexof_out_of_range",
                 "string_ext/value_errors/lastindexof_out_of_range")
}

STRING_START = re.compile(r"([rRbB]{0,2})(\"\"\"|'''|\"|')")


def strip_strings(expr):
    """The expression with its string and bytes literals emptied (their quotes kept)."""
    out = []
    i = 0
    while i < len(expr):
        m = STRING_START.match(expr, i)
        if m and (i == 0 or not (expr[i - 1].isalnum() or expr[i - 1] == "_")):
            quote = m.group(2)
            raw = "r" in m.group(1).lower()
            j = m.end()
            while j < len(expr) and not expr.startswith(quote, j):
                j += 2 if expr[j] == "\\" and not raw else 1
            out.append(quote + quote)
            i = j + len(quote)
            continue
        out.append(expr[i])
        i += 1
    return "".join(out)


def called_functions(code):
    """The functions an expression calls: qualified globals ("math.abs"), globals, members."""
    names = []
    for m in re.finditer(r"(\.\s*)?([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\(", code):
        member, path = m.group(1), re.sub(r"\s", "", m.group(2)).split(".")
        if not member and len(path) > 1 and path[0] in NAMESPACES:
            names.append(".".join(path))
        else:
            names.append(path[-1])  # f(...), x.f(...) or x.y.f(...)
    return names


def free_names(code):
    """Identifiers an expression reads that neither it (a macro's variable) nor CEL defines."""
    bound = set(re.findall(r"\.\w+\s*\(\s*([A-Za-z_]\w*)\s*,", code))
    bound |= set(re.findall(r"\.\w+\s*\(\s*[A-Za-z_]\w*\s*,\s*([A-Za-z_]\w*)\s*,", code))
    bound |= set(re.findall(r"cel\.bind\s*\(\s*([A-Za-z_]\w*)\s*,", code))
    code = QUALIFIED_TYPES.sub("type", code)
    names = []
    # A name not after a dot (a field), or after a leading dot (`.y`: y at the root scope).
    for m in re.finditer(r"(?:(?<![\w.])|(?<![\w)\]}'\"])(\.))([A-Za-z_]\w*)\b(?!\s*[(\"'])",
                         code):
        root, name = m.group(1), m.group(2)
        if name in KEYWORDS or name in TYPE_NAMES or name in NAMESPACES:
            continue
        if name in bound and not root:
            continue
        names.append(name)
    return names


def normalize(expr):
    """The expression without comments, string contents and backquoted names, and with no
    space around dots and `.?` as a plain dot: what the rules below look at."""
    code = strip_strings(expr)
    code = re.sub(r"//[^\n]*", "", code)
    code = re.sub(r"`[^`]*`", "q", code)
    code = re.sub(r"\s*\.\s*\??\s*", ".", code)
    return code


def skip_reason(case, test):
    """Why the case is outside the subset, or None."""
    expects_value = "error" not in case
    if test.has("check_only") and test.get("check_only").boolean():
        return "check-only: asserts a deduced type, which devmgr's checker does not report"
    code = normalize(case["expr"])
    m = re.search(r"(?<![\w.])\.?(?!in\b)([A-Za-z_][\w.]*)\s*\{", code)
    if m or "google.protobuf" in code:
        return f"protocol buffer messages ({m.group(1) if m else 'google.protobuf'})"
    if "`" in strip_strings(case["expr"]):
        return "a backquoted field name (cel-go's opt-in identifier escape syntax)"
    calls = called_functions(code)
    if "format" in calls:
        return FORMAT_VERSION
    for name in calls:
        for pattern, library in LIBRARIES:
            if name not in SUBSET_FUNCTIONS and pattern.search(name):
                return f"{name}() of {library}, not in the subset (cel/functions.h)"
    if re.search(r"(?<![\w.])dyn\b(?!\s*\()", code):
        return ("the type denotation dyn, which cel-go's checker refuses as an undeclared "
                "reference (cel-spec expects an evaluation's error)")
    if re.search(r"(^|[^\w\])}'\"\s])\s*\[\s*\?|[{,]\s*\?", strip_strings(case["expr"])):
        return "optional entries in list and map literals ([?e], {?k: v}), which parser.h lacks"
    functions = [d.get("name").text() for d in test.all("type_env") if d.has("function")]
    if functions:
        return f"functions the test declares ({', '.join(functions)})"
    declared = {d.get("name").text() for d in test.all("type_env")}
    declared |= {b.get("key").text() for b in test.all("bindings")}
    names = free_names(code)
    for name in names:
        if any(d == name or d.startswith(name + ".") or d.endswith("." + name) or
               f".{name}." in d for d in declared):
            return f"the variable {name}, which the test binds (the subset's one is device)"
    unknown = [name for name in calls if name not in SUBSET_FUNCTIONS]
    if test.has("container") and (names or unknown):
        return (f"protocol buffer enums or types named in the container "
                f"{test.get('container').text()}")
    # An undeclared name is an error a checker reports; a case that expects a value from an
    # expression with one relies on evaluation without a checker.
    unchecked = " evaluated unchecked (disable_check)" if case.get("disable_check") else ""
    if expects_value and unknown:
        return f"the undeclared function {unknown[0]}(){unchecked}"
    if expects_value and names:
        return f"the undeclared variable {names[0]}{unchecked}"
    return UNCHECKED.get(case["name"]) or KUBERNETES_DIFFERS.get(case["name"])


# ---------------------------------------------------------------------------------------------
# The cases.


def export_case(file_name, section, test):
    name = "/".join((file_name, section.get("name").text(), test.get("name").text()))
    case = {"name": name, "expr": test.get("expr").text()}
    if test.has("disable_check") and test.get("disable_check").boolean():
        case["disable_check"] = True
    skip = None
    if test.has("value"):
        try:
            case["value"] = export_value(test.get("value"))
        except OutOfSubset as e:
            skip = str(e)
    elif test.has("typed_result"):
        typed = test.get("typed_result")
        if typed.has("result"):
            try:
                case["value"] = export_value(typed.get("result"))
            except OutOfSubset as e:
                skip = str(e)
    elif test.has("eval_error"):
        case["error"] = error_texts(test.get("eval_error"))
    elif test.has("any_eval_errors"):
        case["error"] = [t for s in test.get("any_eval_errors").all("errors")
                         for t in error_texts(s)]
    elif test.has("unknown") or test.has("any_unknowns"):
        skip = "an unknown result (partial evaluation)"
    else:
        case["value"] = {"bool": True}  # simple.proto: an unspecified result is true
    skip = skip_reason(case, test) or skip
    if skip:
        case["skip"] = skip
    return case


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.split("\n\n")[1])
    directory = sys.argv[1]
    cases = []
    seen = {}
    for entry in sorted(os.listdir(directory)):
        if not entry.endswith(".textproto"):
            continue
        with open(os.path.join(directory, entry), encoding="utf-8") as f:
            try:
                simple_file = read_textproto(f.read())
            except SyntaxError as e:
                raise SystemExit(f"{entry}: {e}")
        file_name = simple_file.get("name").text()
        for section in simple_file.all("section"):
            for test in section.all("test"):
                try:
                    case = export_case(file_name, section, test)
                except (SyntaxError, TypeError) as e:
                    raise SystemExit(f"{entry}: test {test.get('name').text()}: {e}")
                # Upstream repeats a few names in a section: the second is "name#2".
                seen[case["name"]] = seen.get(case["name"], 0) + 1
                if seen[case["name"]] > 1:
                    case["name"] += f"#{seen[case['name']]}"
                cases.append(case)
    json.dump(cases, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

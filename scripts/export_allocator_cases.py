#!/usr/bin/env python3
"""Exports upstream's TestAllocator table as JSON test data for devmgr's allocator tests.

Usage: export_allocator_cases.py ALLOCATOR_TESTING_GO > tests/structured/testdata/allocator_cases.json

ALLOCATOR_TESTING_GO is k8s.io/dynamic-resource-allocation's
structured/internal/allocatortesting/allocator_testing.go. The table is Go: composite literals,
the file's small constructor helpers (claimWithRequest, sliceWithDevices, device(...).withTaints,
...) and a few closures that adjust an object before returning it. This script reads that subset
of Go, evaluates each case with its own implementation of those helpers, and writes every case's
inputs (claims, classes, slices, node, allocated devices, features) and expectations (results,
error text, search steps) as Kubernetes API JSON, keyed by the case's name. It is run by hand
when the upstream table changes; the JSON it wrote is what the tests read.
"""

import copy
import json
import re
import sys

# ---------------------------------------------------------------------------------------------
# Tokens


TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>"(?:\\.|[^"\\])*")|"""
    r"""(?P<num>\d+)|(?P<ident>[A-Za-z_][A-Za-z_0-9]*)|"""
    r"""(?P<op>\.\.\.|:=|\+=|\+\+|==|&&|[{}()\[\],:.&*=+\-<>!/])""",
    re.S,
)


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
        if kind == "raw":
            out.append(("str", value[1:-1]))
        elif kind == "str":
            out.append(("str", json.loads(value)))
        elif kind == "num":
            out.append(("num", int(value)))
        else:
            out.append((kind, value))
    out.append(("eof", None))
    return out


# ---------------------------------------------------------------------------------------------
# Values: structs are Struct (Go field names), maps are dict, quantities Quantity, pointers are
# the values they point to.


class Struct(dict):
    pass


class Quantity:
    def __init__(self, text):
        self.text = text

    def __eq__(self, other):
        return isinstance(other, Quantity) and self.text == other.text

    def __repr__(self):
        return f"Q({self.text})"


class Matcher:
    """allocationResult(...): results in any order, no config, no timestamp."""

    def __init__(self, selector, results):
        self.selector = selector
        self.results = results


MAP_TYPES = {"ConsumedCapacity", "ConsumedCapacityCollection"}


def is_map_type(t):
    return t is not None and (t[0] == "map" or (t[0] == "named" and t[1] in MAP_TYPES))


def elem_type(t):
    if t is None:
        return None
    if t[0] == "slice":
        return t[1]
    if t[0] == "map":
        return t[2]
    if t[0] == "named" and t[1] == "ConsumedCapacityCollection":
        return ("named", "ConsumedCapacity")
    return None


def get_field(obj, name):
    if isinstance(obj, Struct):
        if name in obj:
            return obj[name]
        for embedded in ("ObjectMeta", "DeviceConfiguration"):
            if embedded in obj and name in obj[embedded]:
                return obj[embedded][name]
        return None
    raise TypeError(f"field {name} of {obj!r}")


def set_field(obj, name, value):
    if name not in obj:
        for embedded in ("ObjectMeta", "DeviceConfiguration"):
            if embedded in obj:
                obj[embedded][name] = value
                return
    obj[name] = value


# ---------------------------------------------------------------------------------------------
# Parser and evaluator (one pass: expressions are evaluated as they are read).


class Env:
    def __init__(self, parent=None):
        self.vars = {}
        self.parent = parent

    def get(self, name):
        env = self
        while env is not None:
            if name in env.vars:
                return env.vars[name]
            env = env.parent
        raise NameError(name)


class ReturnValue(Exception):
    def __init__(self, value):
        self.value = value


class Parser:
    def __init__(self, tokens, env):
        self.tokens = tokens
        self.pos = 0
        self.env = env

    def peek(self, offset=0):
        return self.tokens[self.pos + offset]

    def next(self):
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def expect(self, value):
        tok = self.next()
        if tok[1] != value:
            raise SyntaxError(f"expected {value}, got {tok} near {self.context()}")
        return tok

    def accept(self, value):
        if self.peek()[1] == value and self.peek()[0] in ("op", "ident"):
            self.pos += 1
            return True
        return False

    def context(self):
        return " ".join(str(t[1]) for t in self.tokens[max(0, self.pos - 8):self.pos + 8])

    # Types ---------------------------------------------------------------------------------

    def parse_type(self):
        if self.accept("*"):
            return ("ptr", self.parse_type())
        if self.accept("["):
            self.expect("]")
            return ("slice", self.parse_type())
        if self.peek()[1] == "map" and self.peek(1)[1] == "[":
            self.next()
            self.expect("[")
            key = self.parse_type()
            self.expect("]")
            return ("map", key, self.parse_type())
        if self.peek()[1] == "func":
            self.next()
            self.expect("(")
            self.expect(")")
            return ("func", self.parse_type())
        name = self.next()[1]
        while self.peek()[1] == "." and self.peek(1)[0] == "ident":
            self.next()
            name = self.next()[1]
        return ("named", name)

    def looks_like_type(self):
        tok = self.peek()
        if tok[1] == "[" and self.peek(1)[1] == "]":
            return True
        if tok[1] == "map" and self.peek(1)[1] == "[":
            return True
        return False

    # Composite literals --------------------------------------------------------------------

    def parse_literal_body(self, t):
        """After the type: { ... }."""
        self.expect("{")
        if t is not None and t[0] == "ptr":
            t = t[1]
        if t is not None and t[0] == "slice":
            items = []
            while not self.accept("}"):
                items.append(self.parse_element(t[1]))
                if not self.accept(","):
                    self.expect("}")
                    break
            return items
        if is_map_type(t):
            out = {}
            while not self.accept("}"):
                key = self.parse_expr()
                self.expect(":")
                out[key_of(key)] = self.parse_element(elem_type(t))
                if not self.accept(","):
                    self.expect("}")
                    break
            return out
        out = Struct()
        out["__type"] = t[1] if t is not None and t[0] == "named" else None
        while not self.accept("}"):
            name = self.next()[1]
            self.expect(":")
            out[name] = self.parse_element(None)
            if not self.accept(","):
                self.expect("}")
                break
        return out

    def parse_element(self, t):
        if self.peek()[1] == "{":
            return self.parse_literal_body(t)
        if self.peek()[1] == "&" and self.peek(1)[1] == "{":
            self.next()
            return self.parse_literal_body(t[1] if t and t[0] == "ptr" else t)
        return value_of(self.parse_expr(), self.env)

    # Expressions ---------------------------------------------------------------------------

    def parse_expr(self):
        left = self.parse_unary()
        while self.peek()[1] in ("+", "-", "*", "/", "==", "&&", "<", ">"):
            op = self.next()[1]
            left = value_of(left, self.env)
            right = value_of(self.parse_unary(), self.env)
            if op == "+":
                left = left + right
            elif op == "-":
                left = left - right
            elif op == "*":
                left = left * right
            elif op == "/":
                left = left // right
            elif op == "==":
                left = left == right
            elif op == "&&":
                left = left and right
        return left

    def parse_unary(self):
        if self.accept("&"):
            return self.parse_unary()
        if self.accept("*"):
            return self.parse_unary()
        if self.accept("-"):
            return -self.parse_unary()
        return self.parse_postfix(self.parse_primary())

    def parse_primary(self):
        tok = self.peek()
        if tok[0] == "str":
            self.next()
            return tok[1]
        if tok[0] == "num":
            self.next()
            return tok[1]
        if tok[1] == "(":
            self.next()
            value = self.parse_expr()
            self.expect(")")
            return value
        if tok[1] == "func":
            return self.parse_func_literal()
        if self.looks_like_type():
            t = self.parse_type()
            return self.parse_literal_body(t)
        if tok[0] == "ident":
            # Qualified names and composite literals of named types.
            name = self.next()[1]
            if self.peek()[1] == "." and self.peek(1)[0] == "ident" and name in PACKAGES:
                self.next()
                name = name + "." + self.next()[1]
            if self.peek()[1] == "{" and is_type_name(name):
                return self.parse_literal_body(("named", name.split(".")[-1]))
            if self.peek()[1] == "[" and name in ("sets.New",):
                self.parse_type_args()
            return Ref(name)
        raise SyntaxError(f"unexpected {tok} near {self.context()}")

    def parse_type_args(self):
        self.expect("[")
        depth = 1
        while depth:
            tok = self.next()
            if tok[1] == "[":
                depth += 1
            elif tok[1] == "]":
                depth -= 1

    def parse_func_literal(self):
        self.expect("func")
        self.expect("(")
        self.expect(")")
        self.parse_type()
        start = self.pos
        self.skip_block()
        end = self.pos
        return FuncLiteral(self.tokens[start:end], self.env)

    def skip_block(self):
        self.expect("{")
        depth = 1
        while depth:
            tok = self.next()
            if tok[1] == "{" and tok[0] == "op":
                depth += 1
            elif tok[1] == "}" and tok[0] == "op":
                depth -= 1

    def parse_args(self):
        args = []
        spread = False
        while not self.accept(")"):
            args.append(value_of(self.parse_expr(), self.env))
            if self.accept("..."):
                spread = True
            if not self.accept(","):
                self.expect(")")
                break
        if spread:
            args = args[:-1] + list(args[-1])
        return args

    def parse_postfix(self, value):
        while True:
            tok = self.peek()
            if tok[1] == "(":
                self.next()
                args = self.parse_args()
                value = call(value, args, self.env)
            elif tok[1] == "." and self.peek(1)[0] == "ident":
                self.next()
                name = self.next()[1]
                value = Member(value_of(value, self.env), name)
            elif tok[1] == "[":
                self.next()
                index = value_of(self.parse_expr(), self.env)
                self.expect("]")
                value = Index(value_of(value, self.env), index)
            else:
                return value


class Ref:
    def __init__(self, name):
        self.name = name


class Member:
    def __init__(self, obj, name):
        self.obj = obj
        self.name = name


class Index:
    def __init__(self, obj, index):
        self.obj = obj
        self.index = index


class FuncLiteral:
    def __init__(self, tokens, env):
        self.tokens = tokens + [("eof", None)]
        self.env = env

    def run(self):
        env = Env(self.env)
        p = Parser(self.tokens, env)
        p.expect("{")
        try:
            while p.peek()[1] != "}":
                run_statement(p)
        except ReturnValue as r:
            return r.value
        return None


def run_statement(p):
    if p.accept("return"):
        raise ReturnValue(value_of(p.parse_expr(), p.env))
    target = p.parse_expr()
    op = p.next()[1]
    if op == ":=":
        p.env.vars[target.name] = value_of(p.parse_expr(), p.env)
        return
    if op == "++":
        assign(target, value_of(target, p.env) + 1, p.env)
        return
    if op == "+=":
        assign(target, value_of(target, p.env) + value_of(p.parse_expr(), p.env), p.env)
        return
    if op == "=":
        t = None
        value = p.parse_element(t)
        assign(target, value_of(value, p.env), p.env)
        return
    raise SyntaxError(f"statement {op} near {p.context()}")


def assign(target, value, env):
    if isinstance(target, Ref):
        env.vars[target.name] = value
    elif isinstance(target, Member):
        set_field(target.obj, target.name, value)
    elif isinstance(target, Index):
        target.obj[target.index] = value
    else:
        raise TypeError("cannot assign")


def value_of(value, env):
    if isinstance(value, Ref):
        return lookup(value.name, env)
    if isinstance(value, Member):
        if isinstance(value.obj, Struct):
            return get_field(value.obj, value.name)
        raise TypeError(f"member {value.name} of {value.obj!r}")
    if isinstance(value, Index):
        return value.obj[value.index]
    return value


def key_of(value):
    if isinstance(value, Ref):
        return lookup(value.name, None)
    return value


PACKAGES = {"slices", "resourceapi", "resource", "fmt", "ptr", "v1", "metav1", "gomega", "sets", "internal",
            "apitypes", "runtime", "types", "gstruct", "strings"}
STRUCT_TYPES = {"Features", "DeviceID", "AllocatorTestCase"}


def is_type_name(name):
    last = name.split(".")[-1]
    return "." in name or last in STRUCT_TYPES or last in MAP_TYPES


# ---------------------------------------------------------------------------------------------
# The test file's helpers.

CONSTANTS = {}
GLOBALS = Env()


def lookup(name, env):
    if env is not None:
        try:
            return env.get(name)
        except NameError:
            pass
    if name in ("nil",):
        return None
    if name in ("true", "false"):
        return name == "true"
    if name in CONSTANTS:
        return CONSTANTS[name]
    if name in HELPERS:
        return HELPERS[name]
    try:
        return GLOBALS.get(name)
    except NameError:
        pass
    enums = {
        "resourceapi.DeviceAllocationModeExactCount": "ExactCount",
        "resourceapi.DeviceAllocationModeAll": "All",
        "resourceapi.DeviceTaintEffectNone": "None",
        "resourceapi.DeviceTaintEffectNoSchedule": "NoSchedule",
        "resourceapi.DeviceTaintEffectNoExecute": "NoExecute",
        "resourceapi.DeviceTolerationOpExists": "Exists",
        "resourceapi.DeviceTolerationOpEqual": "Equal",
        "resourceapi.AllocationConfigSourceClass": "FromClass",
        "resourceapi.AllocationConfigSourceClaim": "FromClaim",
        "v1.NodeSelectorOpIn": "In",
        "resource.BinarySI": "BinarySI",
        "resourceapi.AllocationResultsMaxSize": 32,
        "resource.DecimalSI": "DecimalSI",
        "internal.Stable": "stable",
        "internal.Incubating": "incubating",
        "internal.Experimental": "experimental",
    }
    if name in enums:
        return enums[name]
    raise NameError(name)


def call(fn, args, env):
    if isinstance(fn, FuncLiteral):
        return fn.run()
    if isinstance(fn, Member):
        method = METHODS.get(fn.name)
        if method is None:
            raise NameError(f"method {fn.name}")
        return method(fn.obj, *args)
    if isinstance(fn, Ref):
        target = lookup(fn.name, env)
        if callable(target):
            return target(*args)
        raise NameError(f"call of {fn.name}")
    raise TypeError(f"call of {fn!r}")


def S(type_name, **fields):
    out = Struct(fields)
    out["__type"] = type_name
    return out


def go_sprintf(fmt, *args):
    def conv(m):
        spec = m.group(0)
        value = conv.args.pop(0)
        if spec == "%v" and isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    conv.args = list(args)
    return re.sub(r"%[vsdq]", conv, fmt)


def node(name, region):
    return S("Node", ObjectMeta=S("ObjectMeta", Name=name,
                                  Labels={"region": region, "planet": "earth"}))


def cel_selector(expression):
    return S("DeviceSelector", CEL=S("CELDeviceSelector", Expression=expression))


def device_class(name, driver):
    return S("DeviceClass", ObjectMeta=S("ObjectMeta", Name=name),
             Spec=S("DeviceClassSpec", Selectors=[cel_selector(f'device.driver == "{driver}"')]))


def class_with_allow_multiple(name, driver, multi):
    return S("DeviceClass", ObjectMeta=S("ObjectMeta", Name=name),
             Spec=S("DeviceClassSpec", Selectors=[cel_selector(
                 f'device.driver == "{driver}" && device.allowMultipleAllocations == {"true" if multi else "false"}')]))


def device_configuration(driver, attribute):
    return S("DeviceConfiguration", Opaque=S("OpaqueDeviceConfiguration", Driver=driver,
                                             Parameters=S("RawExtension", Raw={attribute: attribute + "Value"})))


def class_with_config(name, driver, attribute):
    c = device_class(name, driver)
    c["Spec"]["Config"] = [S("DeviceClassConfiguration", DeviceConfiguration=device_configuration(driver, attribute))]
    return c


def claim_with_requests(name, constraints, *requests):
    return S("ResourceClaim", ObjectMeta=S("ObjectMeta", Name=name),
             Spec=S("ResourceClaimSpec", Devices=S("DeviceClaim", Requests=list(requests),
                                                   Constraints=constraints)))


def request(name, cls, count, *selectors):
    return S("DeviceRequest", Name=name, Exactly=S("ExactDeviceRequest", Count=count,
                                                   AllocationMode="ExactCount",
                                                   DeviceClassName=cls, Selectors=list(selectors) or None))


def device_request(name, cls, count):
    return request(name, cls, count)


def all_device_request(name, cls):
    return S("DeviceRequest", Name=name, Exactly=S("ExactDeviceRequest", AllocationMode="All",
                                                   DeviceClassName=cls))


def sub_request(name, cls, count, *fields):
    sub = S("DeviceSubRequest", Name=name, Count=count, AllocationMode="ExactCount",
            DeviceClassName=cls)
    for field in fields:
        if field.get("__type") == "DeviceSelector" or "CEL" in field:
            sub.setdefault("Selectors", []).append(field)
        else:
            sub.setdefault("Tolerations", []).append(field)
    return sub


def capacity_requests(quantity):
    return S("CapacityRequirements", Requests={"capacity-0": quantity} if quantity is not None else {})


def with_capacity_request(obj, quantity):
    out = copy.deepcopy(obj)
    if out.get("__type") == "DeviceRequest":
        out["Exactly"]["Capacity"] = capacity_requests(quantity)
    else:
        out["Capacity"] = capacity_requests(quantity)
    return out


def with_selectors(obj, *selectors):
    out = copy.deepcopy(obj)
    out["Exactly"]["Selectors"] = list(selectors)
    return out


def with_allocation_mode(obj, mode):
    out = copy.deepcopy(obj)
    out["AllocationMode"] = mode
    return out


def request_with_prioritized_list(name, *subs):
    return S("DeviceRequest", Name=name, FirstAvailable=list(subs))


def claim_with_request(name, req, cls, *constraints):
    return claim_with_requests(name, list(constraints) or None, request(req, cls, 1))


def claim(name):
    return S("ResourceClaim", ObjectMeta=S("ObjectMeta", Name=name),
             Spec=S("ResourceClaimSpec", Devices=S("DeviceClaim")))


def with_tolerations(obj, *tolerations):
    out = copy.deepcopy(obj)
    for r in out["Spec"]["Devices"].get("Requests") or []:
        r["Exactly"]["Tolerations"] = (r["Exactly"].get("Tolerations") or []) + list(tolerations)
    return out


def with_requests(obj, *requests):
    out = copy.deepcopy(obj)
    out["Spec"]["Devices"]["Requests"] = list(requests)
    return out


def with_constraints(obj, *constraints):
    out = copy.deepcopy(obj)
    out["Spec"]["Devices"]["Constraints"] = list(constraints)
    return out


def with_configs(obj, configs):
    out = copy.deepcopy(obj)
    out["Spec"]["Devices"]["Config"] = configs
    return out


def claim_with_device_config(name, req, cls, driver, attribute):
    c = claim_with_request(name, req, cls)
    c["Spec"]["Devices"]["Config"] = [S("DeviceClaimConfiguration",
                                         DeviceConfiguration=device_configuration(driver, attribute))]
    return c


def device_claim_config(requests, config):
    return S("DeviceClaimConfiguration", Requests=requests, DeviceConfiguration=config)


def device(name, capacity, attributes):
    d = S("Device", Name=name, Attributes=attributes)
    if isinstance(capacity, dict):
        d["Capacity"] = {k: S("DeviceCapacity", Value=v) for k, v in capacity.items()}
    elif capacity == "fromCounters":
        d["__fromCounters"] = True
    elif capacity is not None:
        raise ValueError(capacity)
    return d


def with_taints(d, *taints):
    out = copy.deepcopy(d)
    out.pop("__fromCounters", None)
    out["Taints"] = (out.get("Taints") or []) + list(taints)
    return out


def with_device_counter_consumption(d, *consumption):
    out = copy.deepcopy(d)
    out["ConsumesCounters"] = (out.get("ConsumesCounters") or []) + list(consumption)
    if out.pop("__fromCounters", False):
        capacity = {}
        for dcc in out["ConsumesCounters"]:
            for name, counter in dcc["Counters"].items():
                capacity[name] = S("DeviceCapacity", Value=counter["Value"])
        out["Capacity"] = capacity
    return out


def with_node_selection(d, selection):
    out = copy.deepcopy(d)
    out.pop("__fromCounters", None)
    if isinstance(selection, Struct):
        out["NodeSelector"] = selection
    elif selection == "nodeSelectionAll":
        out["AllNodes"] = True
    else:
        out["NodeName"] = selection
    return out


def with_binding_conditions(d, conditions, failures):
    out = copy.deepcopy(d)
    out.pop("__fromCounters", None)
    out["BindingConditions"] = conditions
    out["BindingFailureConditions"] = failures
    return out


def with_binds_to_node(d, value):
    out = copy.deepcopy(d)
    out.pop("__fromCounters", None)
    out["BindsToNode"] = value
    return out


def with_allow_multiple_allocations(d):
    out = copy.deepcopy(d)
    out.pop("__fromCounters", None)
    out["AllowMultipleAllocations"] = True
    return out


def with_capacity_request_policy_range(d, capacity):
    out = copy.deepcopy(d)
    out.pop("__fromCounters", None)
    out["Capacity"] = out.get("Capacity") or {}
    for name, q in capacity.items():
        out["Capacity"][name] = S("DeviceCapacity", Value=q, RequestPolicy=S(
            "CapacityRequestPolicy", Default=Quantity("2"),
            ValidRange=S("CapacityRequestPolicyRange", Min=Quantity("2"), Step=Quantity("2"),
                         Max=Quantity("4"))))
    return out


def with_capacity_request_policy_valid_values(d, default, capacity, additional):
    out = copy.deepcopy(d)
    out.pop("__fromCounters", None)
    out["Capacity"] = out.get("Capacity") or {}
    for name, q in capacity.items():
        out["Capacity"][name] = S("DeviceCapacity", Value=q, RequestPolicy=S(
            "CapacityRequestPolicy", Default=default, ValidValues=[default] + list(additional or [])))
    return out


def device_counter_consumption(counter_set, counters):
    return S("DeviceCounterConsumption", CounterSet=counter_set,
             Counters={k: S("Counter", Value=v) for k, v in (counters or {}).items()})


def make_slice(name, selection, pool, driver):
    if isinstance(pool, str):
        pool = S("ResourcePool", Name=pool, ResourceSliceCount=1, Generation=1)
    s = S("ResourceSlice", ObjectMeta=S("ObjectMeta", Name=name),
          Spec=S("ResourceSliceSpec", Driver=driver, Pool=pool))
    if isinstance(selection, Struct):
        s["Spec"]["NodeSelector"] = selection
    elif selection == "nodeSelectionAll":
        s["Spec"]["AllNodes"] = True
    elif selection == "nodeSelectionPerDevice":
        s["Spec"]["PerDeviceNodeSelection"] = True
    else:
        s["Spec"]["NodeName"] = selection
    return s


def slice_with_devices(name, selection, pool, driver, *devices):
    s = make_slice(name, selection, pool, driver)
    if devices:
        s["Spec"]["Devices"] = [strip_marks(d) for d in devices]
    return s


def strip_marks(d):
    d = copy.deepcopy(d)
    d.pop("__fromCounters", None)
    return d


def slice_with_counter_sets(name, selection, pool, driver, *sets):
    s = make_slice(name, selection, pool, driver)
    s["Spec"]["SharedCounters"] = list(sets)
    return s


def resource_pool(name, count):
    return S("ResourcePool", Name=name, ResourceSliceCount=count, Generation=1)


def device_allocation_result(req, driver, pool, dev, admin, *tolerations):
    r = S("DeviceRequestAllocationResult", Request=req, Driver=driver, Pool=pool, Device=dev,
          Tolerations=list(tolerations) or None)
    if admin:
        r["AdminAccess"] = True
    return r


def device_request_allocation_result(req, driver, pool, dev):
    return S("DeviceRequestAllocationResult", Request=req, Driver=driver, Pool=pool, Device=dev)


def with_consumed_capacity(r, share_id, consumed):
    out = copy.deepcopy(r)
    out["ShareID"] = share_id
    out["ConsumedCapacity"] = consumed
    return out


def multiple_device_allocation_results(req, driver, pool, count, start):
    return [device_allocation_result(req, driver, pool, f"device-{i}", False)
            for i in range(start, start + count)]


def node_label_selector(key, *values):
    return S("NodeSelector", NodeSelectorTerms=[S("NodeSelectorTerm", MatchExpressions=[
        S("NodeSelectorRequirement", Key=key, Operator="In", Values=list(values))])])


def local_node_selector(name):
    return S("NodeSelector", NodeSelectorTerms=[S("NodeSelectorTerm", MatchFields=[
        S("NodeSelectorRequirement", Key="metadata.name", Operator="In", Values=[name])])])


def allocation_result_with_config(selector, driver, source, attribute, *results):
    return S("AllocationResult", Devices=S("DeviceAllocationResult", Results=list(results), Config=[
        S("DeviceAllocationConfiguration", Source=source,
          DeviceConfiguration=device_configuration(driver, attribute))]), NodeSelector=selector)


def allocation_result_with_configs(selector, results, configs):
    return S("AllocationResult", Devices=S("DeviceAllocationResult", Results=results, Config=configs),
             NodeSelector=selector)


def counter_set(name, counters):
    return S("CounterSet", Name=name, Counters={k: S("Counter", Value=v) for k, v in (counters or {}).items()})


def binding_result(req, driver, pool, dev, conditions, failures, *tolerations):
    return S("DeviceRequestAllocationResult", Request=req, Driver=driver, Pool=pool, Device=dev,
             BindingConditions=conditions, BindingFailureConditions=failures,
             Tolerations=list(tolerations) or None)


def new_quantity(value, fmt):
    return Quantity(str(value))


def deep_copy(obj):
    return copy.deepcopy(obj)


HELPERS = {
    "node": node,
    "class": device_class,
    "classWithAllowMultipleAllocations": class_with_allow_multiple,
    "deviceConfiguration": device_configuration,
    "classWithConfig": class_with_config,
    "claimWithRequests": claim_with_requests,
    "request": request,
    "deviceRequest": device_request,
    "allDeviceRequest": all_device_request,
    "subRequest": sub_request,
    "requestWithPrioritizedList": request_with_prioritized_list,
    "claimWithRequest": claim_with_request,
    "claim": claim,
    "claimWithDeviceConfig": claim_with_device_config,
    "deviceClaimConfig": device_claim_config,
    "device": device,
    "deviceCounterConsumption": device_counter_consumption,
    "slice": make_slice,
    "sliceWithDevices": slice_with_devices,
    "sliceWithCounterSets": slice_with_counter_sets,
    "resourcePool": resource_pool,
    "deviceAllocationResult": device_allocation_result,
    "deviceRequestAllocationResult": device_request_allocation_result,
    "capacityRequests": capacity_requests,
    "multipleDeviceAllocationResults": multiple_device_allocation_results,
    "nodeLabelSelector": node_label_selector,
    "localNodeSelector": local_node_selector,
    "allocationResult": lambda selector, *results: Matcher(selector, list(results)),
    "allocationResultWithConfig": allocation_result_with_config,
    "allocationResultWithConfigs": allocation_result_with_configs,
    "objects": lambda *objs: list(objs),
    "unwrap": lambda *objs: list(objs),
    "unwrapResourceSlices": lambda *objs: list(objs),
    "sliceWithNoDevices": lambda n, s, p, d: slice_with_devices(n, s, p, d),
    "sliceWithOneDevice": lambda n, s, p, d: slice_with_devices(n, s, p, d, device("device-1", None, None)),
    "sliceWithMultipleDevices": lambda n, s, p, d, c: slice_with_devices(
        n, s, p, d, *[device(f"device-{i}", None, None) for i in range(c)]),
    "counterSet": counter_set,
    "deviceRequestAllocationResultWithBindingConditions": binding_result,
    "MakeDeviceID": lambda d, p, dev: (d, p, dev),
    "internal.MakeSharedDeviceID": lambda id, share: (id[0], id[1], id[2], share),
    "sets.New": lambda *items: list(items),
    "fmt.Sprintf": go_sprintf,
    "ptr.To": lambda v: v,
    "new": lambda v: v,
    "resource.MustParse": lambda text: Quantity(text),
    "resource.NewQuantity": new_quantity,
    "gomega.MatchError": lambda m: m,
    "gomega.ContainSubstring": lambda text: {"errorContains": text},
    "apitypes.UID": lambda text: text,
    "int64": lambda v: v,
    "slices.Concat": lambda *lists: [x for l in lists for x in l],
    "resourceapi.DeviceAllocationMode": lambda v: v,
    "int": lambda v: v,
    "string": lambda v: v,
    "resourceapi.FullyQualifiedName": lambda text: text,
    "resourceapi.QualifiedName": lambda text: text,
}

METHODS = {
    "obj": lambda o: o,
    "DeepCopy": deep_copy,
    "withCapacityRequest": with_capacity_request,
    "withSelectors": with_selectors,
    "withAllocationMode": with_allocation_mode,
    "withTolerations": with_tolerations,
    "withRequests": with_requests,
    "withConstraints": with_constraints,
    "withConfigs": with_configs,
    "withTaints": with_taints,
    "withDeviceCounterConsumption": with_device_counter_consumption,
    "withNodeSelection": with_node_selection,
    "withBindingConditions": with_binding_conditions,
    "withBindsToNode": with_binds_to_node,
    "withAllowMultipleAllocations": with_allow_multiple_allocations,
    "withCapacityRequestPolicyRange": with_capacity_request_policy_range,
    "withCapacityRequestPolicyValidValues": with_capacity_request_policy_valid_values,
    "withConsumedCapacity": with_consumed_capacity,
}

# ---------------------------------------------------------------------------------------------
# Go structs to Kubernetes JSON.

JSON_NAMES = {
    "CEL": "cel", "ShareID": "shareID", "IntValue": "int", "BoolValue": "bool",
    "StringValue": "string", "VersionValue": "version", "IntValues": "ints",
    "BoolValues": "bools", "StringValues": "strings", "VersionValues": "versions",
    "ObjectMeta": "metadata",
}
INLINE = {"DeviceConfiguration"}


def to_json(value):
    if isinstance(value, Quantity):
        return value.text
    if isinstance(value, Struct):
        if value.get("__type") == "RawExtension":
            return value["Raw"]
        out = {}
        for key, item in value.items():
            if key.startswith("__") or item is None:
                continue
            if key in INLINE:
                out.update(to_json(item))
                continue
            name = JSON_NAMES.get(key, key[0].lower() + key[1:])
            converted = to_json(item)
            if converted in ([], {}) and key not in ("Raw",):
                continue
            out[name] = converted
        return out
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


FEATURE_GATES = {
    "AdminAccess": "DRAAdminAccess", "ConsumableCapacity": "DRAConsumableCapacity",
    "DeviceBindingAndStatus": "DRADeviceBindingConditions", "DeviceTaints": "DRADeviceTaints",
    "ListTypeAttributes": "DRAListTypeAttributes", "PartitionableDevices": "DRAPartitionableDevices",
    "PrioritizedList": "DRAPrioritizedList",
}


def export_case(name, case):
    out = {"name": name}
    features = case.get("features") or {}
    out["features"] = sorted(FEATURE_GATES[k] for k, v in features.items() if v is True)
    for key, field in (("claimsToAllocate", "claims"), ("classes", "classes"), ("slices", "slices")):
        items = case.get(key) or []
        objs = []
        for item in items:
            j = to_json(item)
            kind = {"claims": "ResourceClaim", "classes": "DeviceClass", "slices": "ResourceSlice"}[field]
            j = {"apiVersion": "resource.k8s.io/v1", "kind": kind, **j}
            objs.append(j)
        out[field] = objs
    n = case.get("node") or node("node-1", "region-1")
    out["node"] = {"name": n["ObjectMeta"]["Name"], "labels": n["ObjectMeta"]["Labels"]}
    out["allocatedDevices"] = [list(d) for d in case.get("allocatedDevices") or []]
    out["allocatedSharedDeviceIDs"] = [list(d) for d in case.get("allocatedSharedDeviceIDs") or []]
    out["allocatedCapacity"] = [
        {"device": list(dev), "capacity": to_json(cap)}
        for dev, cap in (case.get("allocatedCapacityDevices") or {}).items()]
    results = []
    for expected in case.get("expectResults") or []:
        if isinstance(expected, Matcher):
            results.append({"anyOrder": True, "allocation": {
                "devices": {"results": to_json(expected.results)},
                **({"nodeSelector": to_json(expected.selector)} if expected.selector else {})}})
        else:
            results.append({"anyOrder": False, "allocation": to_json(expected)})
    out["expectResults"] = results
    error = case.get("expectError")
    out["expectError"] = error["errorContains"] if error else None
    steps = case.get("expectNumAllocateOneInvocations")
    by_channel = case.get("expectNumAllocateOneInvocationsByChannel") or {}
    out["expectSteps"] = steps
    out["expectStepsByChannel"] = by_channel
    return out


def main():
    text = open(sys.argv[1]).read()
    body = text[text.index("func TestAllocator("):]
    # The constants and variables of the file and of TestAllocator.
    for m in re.finditer(r"^\t(\w+)\s+= (\"[^\"]*\")$", text, re.M):
        CONSTANTS[m.group(1)] = json.loads(m.group(2))
    CONSTANTS.update({"fromCounters": "fromCounters", "nodeSelectionAll": "nodeSelectionAll",
                      "nodeSelectionPerDevice": "nodeSelectionPerDevice",
                      "fieldNameKey": "metadata.name", "regionKey": "region",
                      "planetKey": "planet", "planetValueEarth": "earth"})
    for name, value in (("zero", 0), ("one", 1), ("two", 2), ("three", 3), ("four", 4)):
        CONSTANTS[name] = Quantity(str(value))
    CONSTANTS["fixedShareID"] = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
    prologue = body[body.index("{\n") + 2:body.index("testcases := map[string]AllocatorTestCase{")]
    p = Parser(tokenize("{" + prologue + "}"), GLOBALS)
    p.expect("{")
    while p.peek()[1] != "}":
        run_statement(p)
    table = body[body.index("testcases := map[string]AllocatorTestCase{") + len("testcases := "):
                 body.index("RunTestAllocator(t, supportedFeatures")]
    p = Parser(tokenize(table), GLOBALS)
    p.parse_type()
    p.expect("{")
    cases = []
    while not p.accept("}"):
        name = p.next()[1]
        p.expect(":")
        try:
            case = p.parse_literal_body(("named", "AllocatorTestCase"))
            cases.append(export_case(name, case))
        except Exception as e:
            raise SystemExit(f"case {name}: {type(e).__name__}: {e} near {p.context()}")
        p.accept(",")
    json.dump(cases, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

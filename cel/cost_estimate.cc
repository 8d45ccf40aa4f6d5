#include "cel/cost_estimate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cel/functions.h"

namespace devmgr::cel {
namespace {

using TK = Type::Kind;

// Sizes (of strings, lists, maps) and costs are ranges of one arithmetic, which saturates at
// 2^64 - 1 (cel-go's SizeEstimate and CostEstimate).
using Range = CostRange;

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();
// cel-go's common cost constants.
constexpr double kStringTraversal = 0.1;
constexpr double kRegexLength = 0.25;
constexpr uint64_t kListCreate = 10;
constexpr uint64_t kMapCreate = 30;

uint64_t AddSaturating(uint64_t x, uint64_t y) { return x > kUnbounded - y ? kUnbounded : x + y; }

uint64_t MultiplySaturating(uint64_t x, uint64_t y) {
  return y != 0 && x > kUnbounded / y ? kUnbounded : x * y;
}

// ByFactor: x times a fraction, rounded up.
uint64_t ByFactor(uint64_t x, double factor) {
  const double product = std::ceil(static_cast<double>(x) * factor);
  return product >= 0x1p64 ? kUnbounded : static_cast<uint64_t>(product);
}

// CeilDivide: x / y rounded up, computed in floating point as upstream computes it (saturated
// where upstream's conversion of a quotient of 2^64 or more is Go's own).
uint64_t CeilDivide(uint64_t x, uint64_t y) {
  const double quotient = std::ceil(static_cast<double>(x) / static_cast<double>(y));
  return quotient >= 0x1p64 ? kUnbounded : static_cast<uint64_t>(quotient);
}

Range Fixed(uint64_t n) { return {n, n}; }
Range Unknown() { return {0, kUnbounded}; }
Range Add(Range a, Range b) { return {AddSaturating(a.min, b.min), AddSaturating(a.max, b.max)}; }
Range Multiply(Range a, Range b) {
  return {MultiplySaturating(a.min, b.min), MultiplySaturating(a.max, b.max)};
}
Range ByFactor(Range a, double factor) {
  return {ByFactor(a.min, factor), ByFactor(a.max, factor)};
}
Range Union(Range a, Range b) { return {std::min(a.min, b.min), std::max(a.max, b.max)}; }

// Entry: the sizes of a list's items (key 1) or of a map's keys and values, where known.
struct Entry {
  bool list = false;
  Range key;
  Range value;
};

std::optional<Entry> Union(const std::optional<Entry>& a, const std::optional<Entry>& b) {
  if (!a.has_value() || !b.has_value()) return std::nullopt;
  return Entry{a->list, Union(a->key, b->key), Union(a->value, b->value)};
}

// Path: how a value is reached from `device`: field names, and "@items", "@values", "@keys" or
// "@indices" for a container's parts (cel-go's AstNode.Path). It is kept as Go keeps cel-go's, a
// slice: a path extended where its array has room is written into that array, so that a path
// extended from the same one before it now ends with the later part. cel-go reads some paths
// after others were extended (a comprehension's range, a two-variable comprehension's key, the
// uses of a bound variable), and the estimate is to be the API server's.
class Path {
 public:
  Path() = default;
  explicit Path(const std::string& root)
      : array_(std::make_shared<std::vector<std::string>>(1, root)), size_(1) {}

  // Then: the path one part longer, as Go's append(path, part): in place where the array has
  // room, else on a new array of twice the room (Go's growth of a small slice of strings).
  Path Then(const char* part) const {
    if (array_ != nullptr && size_ < array_->size()) {
      (*array_)[size_] = part;
      return Path(array_, size_ + 1);
    }
    auto array = std::make_shared<std::vector<std::string>>(std::max<size_t>(1, 2 * size_));
    std::copy_n(Begin(), size_, array->begin());
    (*array)[size_] = part;
    return Path(std::move(array), size_ + 1);
  }
  // CopyThen: the path one part longer on an array of its own (a copy, not an append).
  Path CopyThen(const char* part) const {
    auto array = std::make_shared<std::vector<std::string>>(size_ + 1);
    std::copy_n(Begin(), size_, array->begin());
    (*array)[size_] = part;
    return Path(std::move(array), size_ + 1);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::string& operator[](size_t i) const { return (*array_)[i]; }

 private:
  Path(std::shared_ptr<std::vector<std::string>> array, size_t size)
      : array_(std::move(array)), size_(size) {}
  std::vector<std::string>::const_iterator Begin() const {
    return array_ == nullptr ? std::vector<std::string>::const_iterator() : array_->cbegin();
  }

  // The array, shared by the paths extended from one another; its size is the room.
  std::shared_ptr<std::vector<std::string>> array_;
  size_t size_ = 0;
};

// DeviceSize: the greatest size DRA declares for what `path` reaches (its sizeEstimator over
// the declared type of `device`), or none.
std::optional<Range> DeviceSize(const Path& path) {
  enum class Decl {
    kDevice,
    kDriver,
    kMultipleAllocations,
    kAttributeDomains,
    kAttributes,
    kAttribute,
    kCapacityDomains,
    kCapacities,
    kQuantity,
    kDomain,
    kId,
  };
  if (path.empty() || path[0] != "device") return std::nullopt;
  Decl at = Decl::kDevice;
  for (size_t i = 1; i < path.size(); ++i) {
    const std::string& part = path[i];
    if (part == "@items" || part == "@values") {
      switch (at) {
        case Decl::kAttributeDomains:
          at = Decl::kAttributes;
          break;
        case Decl::kAttributes:
          at = Decl::kAttribute;
          break;
        case Decl::kCapacityDomains:
          at = Decl::kCapacities;
          break;
        case Decl::kCapacities:
          at = Decl::kQuantity;
          break;
        default:
          return std::nullopt;
      }
    } else if (part == "@keys") {
      if (at == Decl::kAttributeDomains || at == Decl::kCapacityDomains) {
        at = Decl::kDomain;
      } else if (at == Decl::kAttributes || at == Decl::kCapacities) {
        at = Decl::kId;
      } else {
        return std::nullopt;
      }
    } else if (at == Decl::kDevice && part == "driver") {
      at = Decl::kDriver;
    } else if (at == Decl::kDevice && part == "allowMultipleAllocations") {
      at = Decl::kMultipleAllocations;
    } else if (at == Decl::kDevice && part == "attributes") {
      at = Decl::kAttributeDomains;
    } else if (at == Decl::kDevice && part == "capacity") {
      at = Decl::kCapacityDomains;
    } else if (at == Decl::kAttributes) {
      // Any other name in a domain's attributes (and "@indices") is an attribute: upstream
      // finds no field of that name, and the map's values are attributes.
      at = Decl::kAttribute;
    } else {
      return std::nullopt;
    }
  }
  switch (at) {
    case Decl::kDriver:
    case Decl::kDomain:
      return Range{0, 63};  // DriverNameMaxLength, DeviceMaxDomainLength
    case Decl::kMultipleAllocations:
      return Range{0, 1};
    case Decl::kAttributeDomains:
    case Decl::kAttributes:
    case Decl::kCapacityDomains:
    case Decl::kCapacities:
    case Decl::kId:
      return Range{0, 32};  // ResourceSliceMaxAttributesAndCapacitiesPerDevice, DeviceMaxIDLength
    case Decl::kAttribute:
      return Range{0, 64};  // DeviceAttributeMaxValueLength (more than the 48 values of a list)
    case Decl::kDevice:
    case Decl::kQuantity:
      return Range{0, 0};
  }
  return std::nullopt;
}

// Scalar: a type whose values have size 1.
bool Scalar(const Type& type) {
  switch (type.kind) {
    case TK::kBool:
    case TK::kDouble:
    case TK::kInt:
    case TK::kUint:
      return true;
    case TK::kOptional:
      return Scalar(type.params[0]);
    default:
      return false;
  }
}

// LiteralSize: the size of a constant, or a list or map written out.
std::optional<Range> LiteralSize(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kConst:
      switch (e.constant.kind()) {
        case Value::Kind::kString: {
          uint64_t runes = 0;
          for (const char c : e.constant.string_value()) runes += (c & 0xC0) != 0x80 ? 1 : 0;
          return Fixed(runes);
        }
        case Value::Kind::kBytes:
          return Fixed(e.constant.bytes_value().size());
        case Value::Kind::kNull:
        case Value::Kind::kBool:
        case Value::Kind::kInt:
        case Value::Kind::kUint:
        case Value::Kind::kDouble:
          return Fixed(1);
        default:
          return std::nullopt;
      }
    case Expr::Kind::kList:
      return Fixed(e.args.size());
    case Expr::Kind::kMap:
      return Fixed(e.args.size() / 2);
    default:
      return std::nullopt;
  }
}

// IntLiteral: an int written out (negative as 0), else `otherwise`.
uint64_t IntLiteral(const Expr* e, uint64_t otherwise) {
  if (e == nullptr || e->kind != Expr::Kind::kConst || e->constant.kind() != Value::Kind::kInt) {
    return otherwise;
  }
  const int64_t value = e->constant.int_value();
  return value < 0 ? 0 : static_cast<uint64_t>(value);
}

// Node: what an estimate of a call sees of its target or of an argument (cel-go's AstNode).
struct Node {
  Path path;
  Type type;
  const Expr* expr = nullptr;
  std::optional<Range> size;
};

// NodeSizeOrUnknown: its size, else unknown (cel-go's own functions look no further).
Range NodeSizeOrUnknown(const Node& node) { return node.size.value_or(Unknown()); }

// NodeSize: its size, else the size declared for its path, else unknown (the extensions' and
// Kubernetes' estimators ask the size estimator again).
Range NodeSize(const Node& node) {
  if (node.size.has_value()) return *node.size;
  return DeviceSize(node.path).value_or(Unknown());
}

struct CallEstimate {
  // Implicit, so that a cost alone is an estimate without a result size.
  CallEstimate(Range cost_of_call, std::optional<Range> size = std::nullopt)
      : cost(cost_of_call), result_size(size) {}
  Range cost;
  std::optional<Range> result_size;
};

// ListCall: a call of cel-go's lists extension that builds a list of `size` items, at `factor`
// an item (its estimateAllocatingListCall).
CallEstimate ListCall(double factor, Range size) {
  return {Add(ByFactor(size, factor), Fixed(1 + kListCreate)), size};
}

// ElementNode: the items of a list, for Kubernetes' list functions (listElementNode).
std::optional<Node> ElementNode(const Node& list) {
  if (list.type.kind != TK::kList) return std::nullopt;
  return Node{list.path.empty() ? Path{} : list.path.CopyThen("@items"), list.type.params[0],
              nullptr, std::nullopt};
}

bool IsString(const Type& type) { return type.kind == TK::kString || type.kind == TK::kBytes; }

// ExtensionCost: the estimators cel-go's lists (version 3) and sets extensions declare for
// their overloads.
std::optional<CallEstimate> ExtensionCost(const Overload& overload, const Node* target,
                                          const std::vector<Node>& args) {
  const std::string name = overload.name;
  const size_t n = args.size();
  if (target != nullptr) {
    if (name == "slice" && n == 2) {
      const uint64_t start = IntLiteral(args[0].expr, 0);
      const uint64_t end = IntLiteral(args[1].expr, NodeSize(*target).max);
      return ListCall(1, Fixed(end - start));  // wraps as upstream's subtraction does
    }
    if (name == "reverse" && n == 0) return ListCall(1, NodeSize(*target));
    if (name == "flatten" && n <= 1) {
      const uint64_t depth = n == 1 ? IntLiteral(args[0].expr, kUnbounded) : 1;
      return ListCall(static_cast<double>(depth), NodeSize(*target));
    }
    if (name == "distinct" && n == 0) {
      const Range size = NodeSize(*target);
      return ListCall(2.0, Multiply(size, size));
    }
    if (name == "sort" && n == 0) {
      const Range size = NodeSize(*target);
      const double factor = IsString(overload.params[0].params[0]) ? 2.0 + kStringTraversal : 2.0;
      return ListCall(factor, Multiply(size, size));
    }
    return std::nullopt;
  }
  if (name == "lists.range" && n == 1) {
    return ListCall(1, Fixed(IntLiteral(args[0].expr, kUnbounded)));
  }
  const bool sets = name == "sets.contains" || name == "sets.intersects";
  if ((sets || name == "sets.equivalent") && n == 2) {
    const double factor = sets ? 1 : 2;
    return CallEstimate{
        Add(ByFactor(Multiply(NodeSize(args[0]), NodeSize(args[1])), factor), Fixed(1))};
  }
  return std::nullopt;
}

// LibraryCost: DRA's estimate of includes() and Kubernetes' library.CostEstimator, by function
// name as upstream looks them up.
std::optional<CallEstimate> LibraryCost(const Overload& overload, const Node* target,
                                        const std::vector<Node>& args) {
  const std::string name = overload.name;
  const size_t n = args.size();
  if (name == "includes" && target != nullptr) {
    return CallEstimate{Range{0, kMaxAttributeValues}};  // 1 for each value it may look at
  }
  if (name == "isSorted" || name == "sum" || name == "max" || name == "min" || name == "indexOf" ||
      name == "lastIndexOf") {
    if (target == nullptr) return std::nullopt;
    const std::optional<Node> element = ElementNode(*target);
    if (!element.has_value()) return CallEstimate{ByFactor(NodeSize(*target), kStringTraversal)};
    Range each = Fixed(1);
    if (IsString(element->type)) each = Add(each, ByFactor(NodeSize(*element), kStringTraversal));
    return CallEstimate{Multiply(NodeSize(*target), each)};
  }
  if (name == "url") {
    // A URL is as large as its text, which equality compares.
    if (n != 1) return std::nullopt;
    const Range text = NodeSize(args[0]);
    return CallEstimate{ByFactor(text, kStringTraversal), text};
  }
  if (name == "lowerAscii" || name == "upperAscii" || name == "substring" || name == "trim") {
    if (target == nullptr) return std::nullopt;
    const Range size = NodeSize(*target);
    return CallEstimate{ByFactor(size, kStringTraversal), size};
  }
  if (name == "replace") {
    if (target == nullptr || n < 2) return std::nullopt;
    const Range size = NodeSize(*target);
    const Range from = NodeSize(args[0]);
    const Range to = NodeSize(args[1]);
    Range count;
    Range kept;
    // The longest result: the shortest match replaced by the longest replacement, as often as
    // it fits (around every character when the match can be empty).
    if (from.min == 0) {
      count.max = size.max < kUnbounded ? size.max + 1 : size.max;
      kept.max = size.max;
    } else if (to.max <= from.min) {
      kept.max = size.max;
    } else {
      count.max = CeilDivide(size.max, from.min);
    }
    // The shortest: the longest match replaced by the shortest replacement.
    if (from.max == 0) {
      count.min = size.min < kUnbounded ? size.min + 1 : size.min;
      kept.min = size.min;
    } else if (from.max <= to.min) {
      kept.min = size.min;
    } else {
      count.min = CeilDivide(size.min, from.max);
    }
    return CallEstimate{ByFactor(size, 2 * kStringTraversal), Add(Multiply(count, to), kept)};
  }
  if (name == "split") {
    if (target == nullptr) return std::nullopt;
    const Range size = NodeSize(*target);
    // A limit written out bounds the parts (a negative one wraps, as Go's uint64 of it).
    uint64_t most = size.max;
    if (n > 1 && args[1].expr != nullptr && args[1].expr->kind == Expr::Kind::kConst &&
        args[1].expr->constant.kind() == Value::Kind::kInt) {
      most = static_cast<uint64_t>(args[1].expr->constant.int_value());
    }
    return CallEstimate{ByFactor(size, 2 * kStringTraversal), Range{0, most}};
  }
  if (name == "join") {
    if (target == nullptr) return std::nullopt;
    const Range items = NodeSize(*target);
    Range size;
    if (const std::optional<Node> element = ElementNode(*target); element.has_value()) {
      size = Multiply(items, NodeSize(*element));
    }
    if (n > 0) {
      const Range separators{items.min > 0 ? items.min - 1 : 0, items.max > 0 ? items.max - 1 : 0};
      size = Add(size, Multiply(NodeSize(args[0]), separators));
    }
    return CallEstimate{ByFactor(size, kStringTraversal), size};
  }
  if (name == "find" || name == "findAll") {
    if (target == nullptr || n < 1) return std::nullopt;
    const Range size = NodeSize(*target);
    const Range text = ByFactor(Add(size, Fixed(1)), kStringTraversal);
    const Range pattern = ByFactor(NodeSize(args[0]), kRegexLength);
    return CallEstimate{Multiply(text, pattern), Range{0, size.max}};
  }
  // Parsing a string is a traversal of it (ip.isCanonical() parses and prints it again); the IP
  // of a CIDR is one of its fields.
  if (name == "ip" && target != nullptr) return CallEstimate{Fixed(1)};
  if ((name == "ip" || name == "cidr" || name == "isIP" || name == "isCIDR" || name == "semver" ||
       name == "isSemver" || name == "quantity" || name == "isQuantity") &&
      n >= 1) {
    return CallEstimate{ByFactor(NodeSize(args[0]), kStringTraversal)};
  }
  if (name == "ip.isCanonical" && n == 1) {
    return CallEstimate{ByFactor(NodeSize(args[0]), 2 * kStringTraversal)};
  }
  // Two values of one of Kubernetes' types: an address, a prefix, a quantity or a version
  // compare in one step, a URL by its text (the right one's), a named format by its name (at
  // most 7: Kubernetes' MaxFormatSize, a tenth of it rounded up, as its cost tests show).
  if (name == "_==_" && n == 2 && args[0].type.kind == args[1].type.kind) {
    switch (args[0].type.kind) {
      case TK::kIP:
      case TK::kCIDR:
      case TK::kQuantity:
      case TK::kSemver:
        return CallEstimate{Fixed(1)};
      case TK::kURL:
        return CallEstimate{Range{1, ByFactor(NodeSize(args[1]).max, kStringTraversal)}};
      case TK::kFormat:
        return CallEstimate{Range{1, 7}};
      default:
        break;
    }
  }
  // A named format validates a string by its pattern: a tenth of the string's length times a
  // quarter of the longest pattern's (32, as Kubernetes' cost tests show).
  if (name == "validate" && target != nullptr && n == 1) {
    return CallEstimate{Multiply(ByFactor(NodeSize(args[0]), kStringTraversal), Fixed(32))};
  }
  if (name == "containsIP" || name == "containsCIDR") {
    if (target == nullptr || n < 1) return std::nullopt;
    const Range address{4, 16};  // the bytes of an IPv4 or IPv6 address
    Range cost = ByFactor(Add(address, address), kStringTraversal);
    if (name == "containsCIDR") {
      cost = Add(Add(cost, ByFactor(address, kStringTraversal)), Fixed(1));
    }
    if (overload.params[1].kind == TK::kString) {
      cost = Add(cost, ByFactor(NodeSize(args[0]), kStringTraversal));
    }
    return CallEstimate{cost};
  }
  if (name == "masked" || name == "prefixLength" || name == "family" || name == "isUnspecified" ||
      name == "isLoopback" || name == "isLinkLocalMulticast" || name == "isLinkLocalUnicast" ||
      name == "sign" || name == "asInteger" || name == "isInteger" ||
      name == "asApproximateFloat" || name == "isGreaterThan" || name == "isLessThan" ||
      name == "compareTo" || name == "add" || name == "sub") {
    return CallEstimate{Fixed(1)};
  }
  return std::nullopt;
}

class Coster {
 public:
  Range Cost(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kConst:
        // A type's name written out is an identifier to cel-go.
        return Fixed(e.constant.kind() == Value::Kind::kType ? 1 : 0);
      case Expr::Kind::kIdent: {
        const Local* local = LocalOf(e);
        // cel-go's checker names a global written with a leading dot by that name while a
        // variable hides it, and its estimate then knows no size on that path.
        const bool hidden = e.root && Peek(e.name) != nullptr;
        paths_[&e] = local != nullptr ? local->path : Path(hidden ? WrittenName(e) : e.name);
        return Fixed(1);
      }
      case Expr::Kind::kSelect:
        return Select(e);
      case Expr::Kind::kIndex:
        return Index(e);
      case Expr::Kind::kCall:
        return Call(e);
      case Expr::Kind::kList:
      case Expr::Kind::kMap:
        return Literal(e);
      case Expr::Kind::kMacro:
        if (e.name == "cel.bind") return Bind(e);
        if (e.name == "sortBy") return SortBy(e);
        return Comprehension(e);
      case Expr::Kind::kCondition:
        return Condition(e);
    }
    return Range{};
  }

 private:
  // Local: a variable of a comprehension or cel.bind.
  struct Local {
    Path path;
    std::optional<Range> size;
    std::optional<Entry> entry;
  };

  const Local* Peek(const std::string& name) const {
    const auto found = locals_.find(name);
    if (found == locals_.end() || found->second.empty()) return nullptr;
    return &found->second.back();
  }
  // LocalOf: the variable the identifier `e` names; none for one written with a leading dot.
  const Local* LocalOf(const Expr& e) const { return e.root ? nullptr : Peek(e.name); }
  void Push(const std::string& name, Local local) { locals_[name].push_back(std::move(local)); }
  void Pop(const std::string& name) { locals_[name].pop_back(); }

  Path PathOf(const Expr& e) const {
    if (e.kind == Expr::Kind::kIdent) {
      if (const Local* local = LocalOf(e); local != nullptr) return local->path;
    }
    const auto found = paths_.find(&e);
    return found == paths_.end() ? Path{} : found->second;
  }

  // LocalSize: the size of a variable's value of type `type`, reached by `path`.
  static std::optional<Range> LocalSize(const Path& path, const Type& type, const Local* local) {
    if (std::optional<Range> declared = DeviceSize(path); declared.has_value()) return declared;
    if (Scalar(type)) return Fixed(1);
    return local != nullptr ? local->size : std::nullopt;
  }

  // SizeOf: what is known of the size of `e`'s value (cel-go's computeSize).
  std::optional<Range> SizeOf(const Expr& e) {
    if (const auto found = sizes_.find(&e); found != sizes_.end()) return found->second;
    if (std::optional<Range> literal = LiteralSize(e); literal.has_value()) return literal;
    if (std::optional<Range> declared = DeviceSize(PathOf(e)); declared.has_value()) {
      sizes_[&e] = *declared;
      return declared;
    }
    if (Scalar(e.type)) return Fixed(1);
    if (e.kind == Expr::Kind::kIdent) {
      if (const Local* local = LocalOf(e); local != nullptr) return local->size;
    }
    return std::nullopt;
  }
  Range SizeOrUnknown(const Expr& e) { return SizeOf(e).value_or(Unknown()); }
  void SetSize(const Expr& e, const std::optional<Range>& size) {
    if (size.has_value()) sizes_[&e] = *size;
  }

  std::optional<Entry> EntryOf(const Expr& e) const {
    if (const auto found = entries_.find(&e); found != entries_.end()) return found->second;
    if (e.kind == Expr::Kind::kIdent) {
      if (const Local* local = LocalOf(e); local != nullptr) return local->entry;
    }
    return std::nullopt;
  }
  void SetEntry(const Expr& e, const std::optional<Entry>& entry) {
    if (entry.has_value()) entries_[&e] = *entry;
  }

  // CostAndNode: the cost of `e`, and what a call then sees of it (its size read at once, as
  // cel-go reads each argument's).
  std::pair<Range, Node> CostAndNode(const Expr& e) {
    const Range cost = Cost(e);
    return {cost, Node{PathOf(e), e.type, &e, SizeOf(e)}};
  }

  Range Select(const Expr& e) {
    // A presence test costs nothing of its own in Kubernetes (PresenceTestHasCost(false)).
    if (e.test_only) return Cost(*e.operand);
    if (e.optional) {
      // x.?f is a call of _?._ on x and the name.
      const Range cost = CostAndNode(*e.operand).first;
      SetSize(e, SizeOf(e));
      return Add(cost, Fixed(1));
    }
    Range cost = Cost(*e.operand);
    const TK operand = e.operand->type.kind;
    if (operand == TK::kMap || operand == TK::kDevice) cost = Add(cost, Fixed(1));
    paths_[&e] = PathOf(*e.operand).Then(e.name.c_str());
    return cost;
  }

  // Index: a call of _[_] (of _[?_] for x[?k]).
  Range Index(const Expr& e) {
    const Range operand_cost = CostAndNode(*e.operand).first;
    const Range cost = Add(Add(operand_cost, CostAndNode(*e.args[0]).first), Fixed(1));
    const TK operand = e.operand->type.kind;
    if (e.optional || operand == TK::kOptional) {
      SetSize(e, SizeOf(e));
      return cost;
    }
    // A list's item (an int key), a map's value; of a dyn operand each that its key allows, in
    // cel-go's order of the overloads, the path of the last kept.
    const TK key = e.args[0]->type.kind;
    const bool list = operand == TK::kList ||
                      (operand != TK::kMap && (key == TK::kInt || e.args[0]->type.is_dyn()));
    const bool map = operand != TK::kList;
    std::optional<Range> size;
    if (const std::optional<Entry> entry = EntryOf(*e.operand); entry.has_value()) {
      size = entry->value;
    }
    if (list) {
      paths_[&e] = PathOf(*e.operand).Then("@items");
      if (!size.has_value()) size = SizeOf(e);
    }
    if (map) {
      paths_[&e] = PathOf(*e.operand).Then("@values");
      if (!size.has_value()) size = SizeOf(e);
    }
    SetSize(e, size);
    return cost;
  }

  Range Literal(const Expr& e) {
    const bool map = e.kind == Expr::Kind::kMap;
    Range cost = Fixed(map ? kMapCreate : kListCreate);
    // The sizes of the items, as far as they are known.
    Range keys{e.args.empty() ? 0 : kUnbounded, 0};
    Range values = keys;
    // A map's key and value are both costed before their sizes are read.
    const size_t step = map ? 2 : 1;
    for (size_t i = 0; i < e.args.size(); i += step) {
      for (size_t j = i; j < i + step; ++j) cost = Add(cost, Cost(*e.args[j]));
      if (map) keys = Union(keys, SizeOrUnknown(*e.args[i]));
      values = Union(values, SizeOrUnknown(*e.args[i + step - 1]));
    }
    SetEntry(e, Entry{!map, map ? keys : Fixed(1), values});
    return cost;
  }

  Range Condition(const Expr& e) {
    const Range condition = CostAndNode(*e.args[0]).first;
    const auto [then, then_node] = CostAndNode(*e.args[1]);
    const auto [otherwise, otherwise_node] = CostAndNode(*e.args[2]);
    SetEntry(e, Union(EntryOf(*e.args[1]), EntryOf(*e.args[2])));
    SetSize(e, Union(NodeSizeOrUnknown(then_node), NodeSizeOrUnknown(otherwise_node)));
    return Add(condition, Union(then, otherwise));
  }

  Range Call(const Expr& e) {
    if (e.name == "dyn") {
      const Range cost = Add(Cost(*e.args[0]), Fixed(1));
      SetSize(e, SizeOf(*e.args[0]));
      SetEntry(e, EntryOf(*e.args[0]));
      return cost;
    }
    std::vector<Range> costs;
    std::vector<Node> args;
    for (const ExprPtr& arg : e.args) {
      auto [cost, node] = CostAndNode(*arg);
      costs.push_back(cost);
      args.push_back(std::move(node));
    }
    Range sum;
    for (const Range& cost : costs) sum = Add(sum, cost);
    if (e.name == "_&&_" || e.name == "_||_") {
      // The right operand may not be evaluated.
      SetSize(e, SizeOf(e));
      return Range{costs[0].min, Add(costs[0], costs[1]).max};
    }
    // Of the calls the checker accepts only the logical operators have no overload; cel-go
    // costs any other such call nothing.
    if (e.overloads.empty()) return Range{};
    Range cost;
    std::optional<Node> target;
    if (e.operand != nullptr) std::tie(cost, target) = CostAndNode(*e.operand);
    // Every overload the arguments' types allow is estimated; the call costs the range of them.
    Range function{kUnbounded, 0};
    std::optional<Range> result;
    const std::vector<Overload>& overloads = Overloads();
    for (const size_t index : e.overloads) {
      const CallEstimate estimate =
          FunctionCost(e, overloads[index], target.has_value() ? &*target : nullptr, args);
      function = Union(function, estimate.cost);
      if (estimate.result_size.has_value()) {
        result = result.has_value() ? Union(*result, *estimate.result_size) : estimate.result_size;
      }
      if (!result.has_value()) result = SizeOf(e);
    }
    SetSize(e, result);
    return Add(cost, Add(function, sum));
  }

  // FunctionCost: the cost of one overload of the call `e`, its arguments' costs left out.
  CallEstimate FunctionCost(const Expr& e, const Overload& overload, const Node* target,
                            const std::vector<Node>& args) {
    if (std::optional<CallEstimate> extension = ExtensionCost(overload, target, args);
        extension.has_value()) {
      return *extension;
    }
    if (std::optional<CallEstimate> library = LibraryCost(overload, target, args);
        library.has_value()) {
      return *library;
    }
    const std::string name = overload.name;
    const auto size = [&args](size_t i) { return NodeSizeOrUnknown(args[i]); };
    const TK first = overload.params.empty() ? TK::kDyn : overload.params[0].kind;
    if (name == "format" && target != nullptr) {
      return {ByFactor(NodeSizeOrUnknown(*target), kStringTraversal)};
    }
    if (name == "bytes" && first == TK::kString) {
      const Range text = size(0);
      return {ByFactor(text, kStringTraversal),
              Range{text.min, text.max * 4}};  // wraps, as upstream
    }
    if (name == "string" && first == TK::kBytes) {
      const Range bytes = size(0);
      return {ByFactor(bytes, kStringTraversal), Range{bytes.min / 4, bytes.max}};
    }
    if (name == "strings.quote") {
      const Range text = size(0);
      return {ByFactor(text, kStringTraversal), Range{text.min + 2, text.max * 2 + 2}};
    }
    if ((name == "startsWith" || name == "endsWith") && args.size() == 1) {
      return {ByFactor(size(0), kStringTraversal)};
    }
    if (name == "@in" && overload.params[1].kind == TK::kList) return {size(1)};
    if (name == "matches" && target != nullptr) {
      const Range text = ByFactor(Add(NodeSizeOrUnknown(*target), Fixed(1)), kStringTraversal);
      return {Multiply(text, ByFactor(size(0), kRegexLength))};
    }
    if (name == "contains" && target != nullptr) {
      return {Multiply(ByFactor(NodeSizeOrUnknown(*target), kStringTraversal),
                       ByFactor(size(0), kStringTraversal))};
    }
    if (name == "_+_" && (first == TK::kString || first == TK::kBytes || first == TK::kList)) {
      const Range joined = Add(size(0), size(1));
      SetEntry(e, Union(EntryOf(*args[0].expr), EntryOf(*args[1].expr)));
      if (first == TK::kList) return {Fixed(1), joined};
      return {ByFactor(joined, kStringTraversal), joined};
    }
    const bool ordering = name == "_<_" || name == "_>_" || name == "_<=_" || name == "_>=_";
    if ((ordering && (first == TK::kString || first == TK::kBytes)) || name == "_==_" ||
        name == "_!=_") {
      const uint64_t shorter = std::min(size(0).max, size(1).max);
      return {ByFactor(Range{shorter > 0 ? 1U : 0U, shorter}, kStringTraversal)};
    }
    return {Fixed(1)};
  }

  // PushIteration declares a comprehension's variable over `range`: its only one (`part` none:
  // a list's item or a map's key), or its first (a list's index or a map's key) or second (the
  // item or the value).
  enum class Part { kOnly, kFirst, kSecond };
  void PushIteration(const std::string& name, const Expr& range, Part part) {
    PushIteration(name, PathOf(range), EntryOf(range), range.type, part);
  }
  // The same over a range reached by `path`, of type `type`, its items' sizes `entry`.
  void PushIteration(const std::string& name, const Path& path, const std::optional<Entry>& entry,
                     const Type& type, Part part) {
    const bool list = entry.has_value() ? entry->list : type.kind == TK::kList;
    std::optional<Range> size;
    const char* step = nullptr;
    switch (part) {
      case Part::kOnly:
        if (entry.has_value()) size = list ? entry->value : entry->key;
        step = list ? "@items" : "@keys";
        break;
      case Part::kFirst:
        if (entry.has_value()) size = entry->key;
        step = list ? "@indices" : "@keys";
        break;
      case Part::kSecond:
        if (entry.has_value()) size = entry->value;
        step = list ? "@items" : "@values";
        break;
    }
    Push(name, Local{path.Then(step), size, std::nullopt});
  }

  // Comprehension: a macro as cel-go expands it, a loop over the range with an accumulator:
  // its start, its condition of going on, its step (the predicate or the transform within it)
  // and its result, each costed as the expansion's expressions.
  Range Comprehension(const Expr& e) {
    const Expr& range = *e.operand;
    const std::string& name = e.name;
    Range cost = Cost(range);
    const bool two = !e.variable2.empty();
    PushIteration(e.variable, range, two ? Part::kFirst : Part::kOnly);
    if (two) PushIteration(e.variable2, range, Part::kSecond);
    const bool list_result = name == "map" || name == "transformList" || name == "filter";
    const bool map_result = name == "transformMap" || name == "transformMapEntry";
    Range loop;  // the condition of going on
    Range step;
    Range result = Fixed(1);  // the accumulator
    std::optional<Entry> entry;
    const Range accumulator = Fixed(1);
    if (name == "all" || name == "exists") {
      // @not_strictly_false(acc) or @not_strictly_false(!acc); acc && p or acc || p.
      loop = Fixed(name == "all" ? 2 : 3);
      step = Range{1, AddSaturating(1, Cost(*e.args[0]).max)};
    } else if (name == "exists_one" || name == "existsOne") {
      // p ? acc + 1 : acc, then acc == 1.
      step = Add(Cost(*e.args[0]), Union(Fixed(2), accumulator));
      result = Fixed(2);
    } else {
      // The step is `f ? next : acc` where there is a filter, which is costed first.
      const bool filtering = name == "filter";
      const Expr* filter = filtering || e.args.size() == 2 ? e.args[0].get() : nullptr;
      const Range filter_cost = filter != nullptr ? Cost(*filter) : Range{};
      const Expr& value = *e.args.back();
      if (list_result) {
        // acc + [t] (acc + [x] for filter): the join, the accumulator and a list of one item.
        Range item_cost = Fixed(1);
        Range item_size;
        if (filtering) {
          const Local* variable = Peek(e.variable);
          item_size = LocalSize(variable->path, ElementType(range), variable).value_or(Unknown());
        } else {
          item_cost = Cost(value);
          item_size = SizeOrUnknown(value);
        }
        step = Add(Fixed(1 + 1 + kListCreate), item_cost);
        entry = Entry{true, Fixed(1), Range{0, item_size.max}};
      } else {
        // cel.@mapInsert(acc, k, t) or cel.@mapInsert(acc, t).
        step = Add(Fixed(name == "transformMap" ? 3 : 2), Cost(value));
      }
      if (filter != nullptr) step = Add(filter_cost, Union(step, accumulator));
    }
    if (two) Pop(e.variable2);
    Pop(e.variable);
    // The accumulator's start: a bool or an int written out, or an empty list or map.
    if (list_result) cost = Add(cost, Fixed(kListCreate));
    if (map_result) cost = Add(cost, Fixed(kMapCreate));
    cost = Add(cost, result);
    const Range count = SizeOrUnknown(range);
    cost = Add(cost, Multiply(count, Add(step, loop)));
    if (list_result || map_result) {
      sizes_[&e] = count;
      SetEntry(e, entry);
    } else {
      sizes_[&e] = Fixed(1);
    }
    return cost;
  }

  // ElementType: the type of a single variable over `range`.
  static Type ElementType(const Expr& range) {
    const Type& type = range.type;
    if (type.kind == TK::kList || type.kind == TK::kMap) return type.params[0];
    return Type::Dyn();
  }

  // Bind: cel.bind(v, init, body), a comprehension over an empty list whose accumulator is v.
  Range Bind(const Expr& e) {
    Range cost = Add(Fixed(kListCreate), Cost(*e.operand));
    Push(e.variable, Local{PathOf(*e.operand), SizeOf(*e.operand), EntryOf(*e.operand)});
    cost = Add(cost, Cost(*e.args[0]));
    Pop(e.variable);
    SetSize(e, SizeOf(*e.args[0]));
    SetEntry(e, EntryOf(*e.args[0]));
    return cost;
  }

  // SortBy: cel-go binds the range to a variable r and calls r.@sortByAssociatedKeys(r.map(x,
  // key)), one overload per key type that sorts.
  Range SortBy(const Expr& e) {
    const Expr& range = *e.operand;
    const Expr& key = *e.args[0];
    const Range bound = Add(Fixed(kListCreate), Cost(range));
    const Local input{PathOf(range), SizeOf(range), EntryOf(range)};
    // The map over r: r, the accumulator's start and result, and for each item acc + [key].
    PushIteration(e.variable, input.path, input.entry, range.type, Part::kOnly);
    const Range step = Add(Fixed(1 + 1 + kListCreate), Cost(key));
    Pop(e.variable);
    const Range count = LocalSize(input.path, range.type, &input).value_or(Unknown());
    const Range keys = Add(Fixed(1 + kListCreate + 1), Multiply(count, step));
    // Keys of strings or bytes cost more to compare; keys of dyn may be of any type.
    const Range squared = Multiply(count, count);
    Range sort = ListCall(IsString(key.type) ? 2.0 + kStringTraversal : 2.0, squared).cost;
    if (key.type.is_dyn()) sort = Union(sort, ListCall(2.0 + kStringTraversal, squared).cost);
    sizes_[&e] = squared;
    // The call: r, the keys and the sort.
    return Add(bound, Add(Fixed(1), Add(keys, sort)));
  }

  std::map<const Expr*, Path> paths_;
  std::map<const Expr*, Range> sizes_;
  std::map<const Expr*, Entry> entries_;
  std::map<std::string, std::vector<Local>> locals_;
};

}  // namespace

CostRange EstimateCost(const Expr& root) { return Coster().Cost(root); }

}  // namespace devmgr::cel

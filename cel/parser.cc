#include "cel/parser.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cel/error_display.h"

namespace devmgr::cel {
namespace {

constexpr int kMaxDepth = 100;
// The deepest syntax tree accepted: chains of operators and fields nest without parentheses,
// and the checker and the interpreter recurse once per level.
constexpr int kMaxTreeDepth = 250;
// The name cel-go's macros give their accumulator, which no iteration variable may take.
constexpr absl::string_view kAccumulator = "__result__";

int TreeDepth(const Expr& e) {
  int deepest = 0;
  if (e.operand != nullptr) deepest = TreeDepth(*e.operand);
  for (const ExprPtr& arg : e.args) deepest = std::max(deepest, TreeDepth(*arg));
  return deepest + 1;
}

enum class Token {
  kEnd,
  kIdent,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kTrue,
  kFalse,
  kNull,
  kIn,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kDot,
  kComma,
  kColon,
  kQuestion,
  kNot,
  kMinus,
  kPlus,
  kStar,
  kSlash,
  kPercent,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
};

// Words the language keeps for itself.
bool IsReserved(absl::string_view word) {
  static constexpr absl::string_view kReserved[] = {
      "as",  "break", "const",   "continue",  "else",   "for", "function", "if",    "import",
      "let", "loop",  "package", "namespace", "return", "var", "void",     "while",
  };
  for (absl::string_view reserved : kReserved) {
    if (word == reserved) return true;
  }
  return false;
}

struct Lexeme {
  Token token = Token::kEnd;
  size_t position = 0;
  std::string text;  // identifier, or decoded string / bytes
  int64_t int_value = 0;
  uint64_t uint_value = 0;
  double double_value = 0;
  // A number out of its type's range: cel-go's text for it ("invalid int literal"), which the
  // parser reports where the literal starts, its sign included.
  const char* out_of_range = nullptr;
};

class Lexer {
 public:
  explicit Lexer(absl::string_view text) : text_(text) {}

  // Next reads the next token; an error for text that is no token.
  absl::StatusOr<Lexeme> Next() {
    SkipSpace();
    Lexeme out;
    out.position = pos_;
    if (pos_ >= text_.size()) return out;
    const char c = text_[pos_];
    if (absl::ascii_isalpha(c) || c == '_') {
      // String prefixes: r (raw), b (bytes), in either order and case.
      size_t quote = pos_;
      bool raw = false;
      bool bytes = false;
      while (quote < text_.size() && quote - pos_ < 2) {
        const char p = absl::ascii_tolower(text_[quote]);
        if (p == 'r' && !raw) {
          raw = true;
        } else if (p == 'b' && !bytes) {
          bytes = true;
        } else {
          break;
        }
        ++quote;
      }
      if ((raw || bytes) && quote < text_.size() && (text_[quote] == '"' || text_[quote] == '\'')) {
        pos_ = quote;
        return String(out, raw, bytes);
      }
      size_t end = pos_;
      while (end < text_.size() && (absl::ascii_isalnum(text_[end]) || text_[end] == '_')) ++end;
      out.text = std::string(text_.substr(pos_, end - pos_));
      pos_ = end;
      if (out.text == "true") {
        out.token = Token::kTrue;
      } else if (out.text == "false") {
        out.token = Token::kFalse;
      } else if (out.text == "null") {
        out.token = Token::kNull;
      } else if (out.text == "in") {
        out.token = Token::kIn;
      } else {
        out.token = Token::kIdent;
      }
      return out;
    }
    if (absl::ascii_isdigit(c) ||
        (c == '.' && pos_ + 1 < text_.size() && absl::ascii_isdigit(text_[pos_ + 1]))) {
      return Number(out);
    }
    if (c == '"' || c == '\'') return String(out, false, false);
    const auto two = [&](char next) { return pos_ + 1 < text_.size() && text_[pos_ + 1] == next; };
    struct Symbol {
      const char* text;
      Token token;
    };
    static constexpr Symbol kSymbols[] = {
        {"==", Token::kEq},      {"!=", Token::kNe},    {"<=", Token::kLe},
        {">=", Token::kGe},      {"&&", Token::kAnd},   {"||", Token::kOr},
        {"(", Token::kLParen},   {")", Token::kRParen}, {"[", Token::kLBracket},
        {"]", Token::kRBracket}, {"{", Token::kLBrace}, {"}", Token::kRBrace},
        {".", Token::kDot},      {",", Token::kComma},  {":", Token::kColon},
        {"?", Token::kQuestion}, {"!", Token::kNot},    {"-", Token::kMinus},
        {"+", Token::kPlus},     {"*", Token::kStar},   {"/", Token::kSlash},
        {"%", Token::kPercent},  {"<", Token::kLt},     {">", Token::kGt},
    };
    for (const Symbol& symbol : kSymbols) {
      const size_t length = symbol.text[1] == '\0' ? 1 : 2;
      if (c != symbol.text[0] || (length == 2 && !two(symbol.text[1]))) continue;
      out.token = symbol.token;
      pos_ += length;
      return out;
    }
    return Error(pos_, absl::StrCat("token recognition error at: '", std::string(1, c), "'"));
  }

  // Error notes text that is not CEL's grammar, which cel-go's grammar refuses ("Syntax
  // error: ..."), and ends the parse: what it gives is only a sign that it ended.
  absl::Status Error(size_t position, absl::string_view what) {
    return Stop(position, absl::StrCat("Syntax error: ", what));
  }
  // Stop notes an error after which the parse cannot go on, and ends it.
  absl::Status Stop(size_t position, std::string what) {
    Note(position, std::move(what));
    return absl::InvalidArgumentError("the expression was refused");
  }
  // Note notes an error, with cel-go's text.
  void Note(size_t position, std::string what) { errors_.push_back({position, std::move(what)}); }
  // Errors: what was noted, in the order found.
  std::vector<PlacedError>& errors() { return errors_; }

 private:
  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  absl::StatusOr<Lexeme> Number(Lexeme out) {
    const size_t start = pos_;
    // Lower-case "0x" only, as CEL's grammar has it ("0X1" is 0, then a name).
    if (text_.substr(pos_, 2) == "0x") {
      pos_ += 2;
      const size_t digits = pos_;
      while (pos_ < text_.size() && absl::ascii_isxdigit(text_[pos_])) ++pos_;
      if (pos_ == digits) return Error(start, "malformed hexadecimal literal");
      const std::string hex(text_.substr(digits, pos_ - digits));
      uint64_t value = 0;
      if (!absl::SimpleHexAtoi(hex, &value)) return TooLarge(out);
      return Integer(out, value);
    }
    while (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) ++pos_;
    bool is_double = false;
    if (pos_ + 1 < text_.size() && text_[pos_] == '.' && absl::ascii_isdigit(text_[pos_ + 1])) {
      is_double = true;
      ++pos_;
      while (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t exponent = pos_ + 1;
      if (exponent < text_.size() && (text_[exponent] == '+' || text_[exponent] == '-')) {
        ++exponent;
      }
      if (exponent < text_.size() && absl::ascii_isdigit(text_[exponent])) {
        is_double = true;
        pos_ = exponent;
        while (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) ++pos_;
      }
    }
    const std::string number(text_.substr(start, pos_ - start));
    if (is_double) {
      out.token = Token::kDouble;
      // Out of range is an error, as Go's strconv.ParseFloat's in cel-go (1e-400 is 0).
      if (!absl::SimpleAtod(number, &out.double_value) || std::isinf(out.double_value)) {
        out.out_of_range = "invalid double literal";
      }
      return out;
    }
    uint64_t value = 0;
    if (!absl::SimpleAtoi(number, &value)) return TooLarge(out);
    return Integer(out, value);
  }

  // TooLarge: an integer literal out of its type's range.
  Lexeme TooLarge(Lexeme out) {
    Lexeme integer = Integer(std::move(out), 0);
    integer.out_of_range =
        integer.token == Token::kUint ? "invalid uint literal" : "invalid int literal";
    return integer;
  }

  // Integer: an int, or with a u suffix a uint. An int above the int range is kept for the
  // parser, which allows exactly 2^63 after a unary minus.
  Lexeme Integer(Lexeme out, uint64_t value) {
    if (pos_ < text_.size() && (text_[pos_] == 'u' || text_[pos_] == 'U')) {
      ++pos_;
      out.token = Token::kUint;
      out.uint_value = value;
      return out;
    }
    out.token = Token::kInt;
    out.uint_value = value;
    return out;
  }

  absl::StatusOr<Lexeme> String(Lexeme out, bool raw, bool bytes) {
    const char quote = text_[pos_];
    const bool triple = text_.substr(pos_, 3) == std::string(3, quote);
    pos_ += triple ? 3 : 1;
    std::string value;
    while (true) {
      if (pos_ >= text_.size()) return Error(out.position, "unterminated string literal");
      const char c = text_[pos_];
      if (triple ? text_.substr(pos_, 3) == std::string(3, quote) : c == quote) {
        pos_ += triple ? 3 : 1;
        break;
      }
      if (!triple && (c == '\n' || c == '\r')) {
        return Error(out.position, "newline in a string literal");
      }
      if (c != '\\' || raw) {
        value += c;
        ++pos_;
        continue;
      }
      absl::Status escaped = Escape(value, bytes);
      if (!escaped.ok()) return escaped;
    }
    out.token = bytes ? Token::kBytes : Token::kString;
    out.text = std::move(value);
    return out;
  }

  // Escape decodes the escape sequence at pos_ (a backslash) into `value`.
  absl::Status Escape(std::string& value, bool bytes) {
    const size_t start = pos_;
    ++pos_;
    if (pos_ >= text_.size()) return Error(start, "unterminated escape sequence");
    const char c = text_[pos_++];
    switch (c) {
      case 'a':
        value += '\a';
        return absl::OkStatus();
      case 'b':
        value += '\b';
        return absl::OkStatus();
      case 'f':
        value += '\f';
        return absl::OkStatus();
      case 'n':
        value += '\n';
        return absl::OkStatus();
      case 'r':
        value += '\r';
        return absl::OkStatus();
      case 't':
        value += '\t';
        return absl::OkStatus();
      case 'v':
        value += '\v';
        return absl::OkStatus();
      case '\\':
      case '\'':
      case '"':
      case '`':
      case '?':
        value += c;
        return absl::OkStatus();
      default:
        break;
    }
    int digits = 0;
    int base = 16;
    if (c == 'x' || c == 'X') {
      digits = 2;
    } else if ((c == 'u' || c == 'U') && bytes) {
      // A code point has no place among bytes: cel-go refuses it with this text.
      return Error(start, "unable to unescape string");
    } else if (c == 'u') {
      digits = 4;
    } else if (c == 'U') {
      digits = 8;
    } else if (c >= '0' && c <= '3') {
      digits = 2;
      base = 8;
      --pos_;
      ++digits;
    } else {
      return Error(start, absl::StrCat("invalid escape sequence \\", std::string(1, c)));
    }
    if (pos_ + static_cast<size_t>(digits) > text_.size()) {
      return Error(start, "incomplete escape sequence");
    }
    uint32_t code = 0;
    for (int i = 0; i < digits; ++i) {
      const char d = text_[pos_++];
      int digit = 0;
      if (base == 8 && d >= '0' && d <= '7') {
        digit = d - '0';
      } else if (base == 16 && absl::ascii_isxdigit(d)) {
        digit = absl::ascii_isdigit(d) ? d - '0' : absl::ascii_tolower(d) - 'a' + 10;
      } else {
        return Error(start, "malformed escape sequence");
      }
      code = code * static_cast<uint32_t>(base) + static_cast<uint32_t>(digit);
    }
    // \x and octal escapes are bytes in a bytes literal, code points in a string.
    if (bytes && (c == 'x' || c == 'X' || base == 8)) {
      value += static_cast<char>(code);
      return absl::OkStatus();
    }
    if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return Error(start, "invalid unicode code point");
    }
    // UTF-8.
    if (code < 0x80) {
      value += static_cast<char>(code);
    } else if (code < 0x800) {
      value += static_cast<char>(0xC0 | (code >> 6));
      value += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      value += static_cast<char>(0xE0 | (code >> 12));
      value += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      value += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      value += static_cast<char>(0xF0 | (code >> 18));
      value += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      value += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      value += static_cast<char>(0x80 | (code & 0x3F));
    }
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t pos_ = 0;
  std::vector<PlacedError> errors_;
};

class Parser {
 public:
  explicit Parser(absl::string_view text) : lexer_(text) {}

  // Errors: what the parse refused, in the order found.
  const std::vector<PlacedError>& errors() { return lexer_.errors(); }

  absl::StatusOr<ExprPtr> ParseAll() {
    if (absl::Status read = Advance(); !read.ok()) return read;
    absl::StatusOr<ExprPtr> expr = ParseExpr();
    if (!expr.ok()) return expr;
    if (current_.token != Token::kEnd) return Unexpected();
    return expr;
  }

 private:
  absl::Status Advance() {
    absl::StatusOr<Lexeme> next = lexer_.Next();
    if (!next.ok()) return next.status();
    current_ = *std::move(next);
    return absl::OkStatus();
  }

  absl::Status Unexpected() {
    if (current_.token == Token::kEnd) {
      return lexer_.Error(current_.position, "mismatched input '<EOF>'");
    }
    return lexer_.Error(current_.position, "unexpected token");
  }

  absl::Status Expect(Token token, absl::string_view what) {
    if (current_.token != token) {
      return lexer_.Error(current_.position, absl::StrCat("expected ", what));
    }
    return Advance();
  }

  static ExprPtr Node(Expr::Kind kind, size_t position) {
    auto expr = std::make_unique<Expr>();
    expr->kind = kind;
    expr->position = position;
    return expr;
  }

  static ExprPtr Call(const std::string& function, size_t position, std::vector<ExprPtr> args) {
    ExprPtr call = Node(Expr::Kind::kCall, position);
    call->name = function;
    call->args = std::move(args);
    return call;
  }

  // Refuse notes what cel-go's parser refuses once its grammar accepted the text (a literal out
  // of range, a reserved identifier, a macro's arguments), with cel-go's text, and gives what
  // stands in its place (Placeholder).
  ExprPtr Refuse(size_t position, std::string what) {
    lexer_.Note(position, std::move(what));
    return Placeholder(position);
  }

  // Placeholder: what stands for an expression refused, for the parse to go on, as cel-go's
  // does: neither a name nor a selection, which a macro or has() around it refuses too.
  static ExprPtr Placeholder(size_t position) { return Node(Expr::Kind::kConst, position); }

  // Depth guards nesting: each level of ParseExpr and ParseUnary counts.
  struct Depth {
    explicit Depth(int& depth) : depth_(depth) { ++depth_; }
    ~Depth() { --depth_; }
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;
    int& depth_;
  };

  absl::StatusOr<ExprPtr> ParseExpr() {
    Depth guard(depth_);
    if (depth_ > kMaxDepth) return lexer_.Error(current_.position, "expression nests too deep");
    absl::StatusOr<ExprPtr> condition = ParseOr();
    if (!condition.ok() || current_.token != Token::kQuestion) return condition;
    // Placed at its '?', as cel-go places _?_:_.
    const size_t position = current_.position;
    if (absl::Status read = Advance(); !read.ok()) return read;
    absl::StatusOr<ExprPtr> then = ParseOr();
    if (!then.ok()) return then;
    if (absl::Status colon = Expect(Token::kColon, "':'"); !colon.ok()) return colon;
    absl::StatusOr<ExprPtr> otherwise = ParseExpr();
    if (!otherwise.ok()) return otherwise;
    ExprPtr node = Node(Expr::Kind::kCondition, position);
    node->args.push_back(*std::move(condition));
    node->args.push_back(*std::move(then));
    node->args.push_back(*std::move(otherwise));
    return node;
  }

  // A left-associative level of binary operators.
  template <typename Next>
  absl::StatusOr<ExprPtr> ParseBinary(const std::vector<std::pair<Token, const char*>>& ops,
                                      Next next) {
    absl::StatusOr<ExprPtr> left = (this->*next)();
    if (!left.ok()) return left;
    while (true) {
      const char* function = nullptr;
      for (const auto& [token, name] : ops) {
        if (current_.token == token) function = name;
      }
      if (function == nullptr) return left;
      const size_t position = current_.position;
      if (absl::Status read = Advance(); !read.ok()) return read;
      absl::StatusOr<ExprPtr> right = (this->*next)();
      if (!right.ok()) return right;
      std::vector<ExprPtr> args;
      args.push_back(*std::move(left));
      args.push_back(*std::move(right));
      left = Call(function, position, std::move(args));
    }
  }

  // A level of a logical operator. Its terms join in a balanced tree, as cel-go's parser joins
  // them: a chain of 1,000 conditions nests 10 levels deep, not 1,000, and passes the tree's
  // depth limit as it does upstream.
  template <typename Next>
  absl::StatusOr<ExprPtr> ParseLogical(Token token, const char* function, Next next) {
    absl::StatusOr<ExprPtr> first = (this->*next)();
    if (!first.ok()) return first;
    std::vector<ExprPtr> terms;
    terms.push_back(*std::move(first));
    std::vector<size_t> positions;  // of the operators, between the terms
    while (current_.token == token) {
      positions.push_back(current_.position);
      if (absl::Status read = Advance(); !read.ok()) return read;
      absl::StatusOr<ExprPtr> term = (this->*next)();
      if (!term.ok()) return term;
      terms.push_back(*std::move(term));
    }
    if (positions.empty()) return std::move(terms[0]);
    return Balanced(function, terms, positions, 0, positions.size() - 1);
  }

  // Balanced: the operators lo..hi (inclusive) and the terms around them, split at the middle
  // operator as cel-go's balancer splits them.
  static ExprPtr Balanced(const char* function, std::vector<ExprPtr>& terms,
                          const std::vector<size_t>& positions, size_t lo, size_t hi) {
    const size_t mid = (lo + hi + 1) / 2;
    std::vector<ExprPtr> args;
    args.push_back(mid == lo ? std::move(terms[mid])
                             : Balanced(function, terms, positions, lo, mid - 1));
    args.push_back(mid == hi ? std::move(terms[mid + 1])
                             : Balanced(function, terms, positions, mid + 1, hi));
    return Call(function, positions[mid], std::move(args));
  }

  absl::StatusOr<ExprPtr> ParseOr() { return ParseLogical(Token::kOr, "_||_", &Parser::ParseAnd); }
  absl::StatusOr<ExprPtr> ParseAnd() {
    return ParseLogical(Token::kAnd, "_&&_", &Parser::ParseRelation);
  }
  absl::StatusOr<ExprPtr> ParseRelation() {
    return ParseBinary({{Token::kEq, "_==_"},
                        {Token::kNe, "_!=_"},
                        {Token::kLt, "_<_"},
                        {Token::kLe, "_<=_"},
                        {Token::kGt, "_>_"},
                        {Token::kGe, "_>=_"},
                        {Token::kIn, "@in"}},
                       &Parser::ParseAddition);
  }
  absl::StatusOr<ExprPtr> ParseAddition() {
    return ParseBinary({{Token::kPlus, "_+_"}, {Token::kMinus, "_-_"}},
                       &Parser::ParseMultiplication);
  }
  absl::StatusOr<ExprPtr> ParseMultiplication() {
    return ParseBinary({{Token::kStar, "_*_"}, {Token::kSlash, "_/_"}, {Token::kPercent, "_%_"}},
                       &Parser::ParseUnary);
  }

  absl::StatusOr<ExprPtr> ParseUnary() {
    Depth guard(depth_);
    if (depth_ > kMaxDepth) return lexer_.Error(current_.position, "expression nests too deep");
    const size_t position = current_.position;
    if (current_.token == Token::kNot) {
      if (absl::Status read = Advance(); !read.ok()) return read;
      absl::StatusOr<ExprPtr> operand = ParseUnary();
      if (!operand.ok()) return operand;
      std::vector<ExprPtr> args;
      args.push_back(*std::move(operand));
      return Call("!_", position, std::move(args));
    }
    if (current_.token == Token::kMinus) {
      if (absl::Status read = Advance(); !read.ok()) return read;
      // A minus before a number is part of the literal, as in CEL's grammar (so that
      // -9223372036854775808 is an int, and -1.x applies to -1).
      if (current_.token == Token::kInt || current_.token == Token::kDouble) {
        return ParseMember(/*sign=*/position);
      }
      absl::StatusOr<ExprPtr> operand = ParseUnary();
      if (!operand.ok()) return operand;
      std::vector<ExprPtr> args;
      args.push_back(*std::move(operand));
      return Call("-_", position, std::move(args));
    }
    return ParseMember();
  }

  absl::StatusOr<ExprPtr> ParseMember(std::optional<size_t> sign = std::nullopt) {
    absl::StatusOr<ExprPtr> expr = ParsePrimary(sign);
    if (!expr.ok()) return expr;
    while (true) {
      const size_t position = current_.position;
      if (current_.token == Token::kDot) {
        if (absl::Status read = Advance(); !read.ok()) return read;
        bool optional = false;
        if (current_.token == Token::kQuestion) {
          optional = true;
          if (absl::Status read = Advance(); !read.ok()) return read;
        }
        if (current_.token != Token::kIdent) {
          return lexer_.Error(current_.position, "expected a field or method name");
        }
        std::string name = current_.text;
        if (absl::Status read = Advance(); !read.ok()) return read;
        if (!optional && current_.token == Token::kLParen) {
          // A call is where its arguments open, as cel-go places it (its errors name that).
          const size_t open = current_.position;
          absl::StatusOr<std::vector<ExprPtr>> args = ParseArgs(Token::kRParen, ")");
          if (!args.ok()) return args.status();
          absl::StatusOr<ExprPtr> call =
              MemberCall(*std::move(expr), std::move(name), open, *std::move(args));
          if (!call.ok()) return call;
          expr = std::move(call);
          continue;
        }
        ExprPtr select = Node(Expr::Kind::kSelect, position);
        select->operand = *std::move(expr);
        select->name = std::move(name);
        select->optional = optional;
        expr = std::move(select);
        continue;
      }
      if (current_.token == Token::kLBracket) {
        if (absl::Status read = Advance(); !read.ok()) return read;
        bool optional = false;
        if (current_.token == Token::kQuestion) {
          optional = true;
          if (absl::Status read = Advance(); !read.ok()) return read;
        }
        absl::StatusOr<ExprPtr> key = ParseExpr();
        if (!key.ok()) return key;
        if (absl::Status close = Expect(Token::kRBracket, "']'"); !close.ok()) return close;
        ExprPtr index = Node(Expr::Kind::kIndex, position);
        index->operand = *std::move(expr);
        index->args.push_back(*std::move(key));
        index->optional = optional;
        expr = std::move(index);
        continue;
      }
      return expr;
    }
  }

  // ParseArgs reads expressions separated by commas up to `close` (the current token is the
  // opening one); a trailing comma is allowed in list and map literals only.
  absl::StatusOr<std::vector<ExprPtr>> ParseArgs(Token close, const char* close_text,
                                                 bool map = false, bool trailing_comma = false) {
    std::vector<ExprPtr> args;
    if (absl::Status read = Advance(); !read.ok()) return read;
    while (current_.token != close) {
      absl::StatusOr<ExprPtr> arg = ParseExpr();
      if (!arg.ok()) return arg.status();
      args.push_back(*std::move(arg));
      if (map) {
        if (absl::Status colon = Expect(Token::kColon, "':'"); !colon.ok()) return colon;
        absl::StatusOr<ExprPtr> value = ParseExpr();
        if (!value.ok()) return value.status();
        args.push_back(*std::move(value));
      }
      if (current_.token == Token::kComma) {
        if (absl::Status read = Advance(); !read.ok()) return read;
        if (current_.token == close && !trailing_comma) return Unexpected();
        continue;
      }
      if (current_.token != close) {
        return lexer_.Error(current_.position, absl::StrCat("expected '", close_text, "'"));
      }
    }
    if (absl::Status read = Advance(); !read.ok()) return read;
    return args;
  }

  // The variable of a macro: a plain identifier other than the accumulator's name (cel.bind may
  // take that one); else nothing, refused with the text of cel-go's macro. Written with a
  // leading dot, the dot is part of its name (cel-go's), which no identifier then matches.
  std::optional<std::string> MacroVariable(const ExprPtr& arg, absl::string_view macro) {
    if (arg->kind != Expr::Kind::kIdent) {
      const bool quantifier =
          macro == "all" || macro == "exists" || macro == "exists_one" || macro == "existsOne";
      lexer_.Note(arg->position, macro == "cel.bind"
                                     ? "cel.bind() variable names must be simple identifiers"
                                 : quantifier ? "argument must be a simple name"
                                              : "argument is not an identifier");
      return std::nullopt;
    }
    if (macro != "cel.bind" && WrittenName(*arg) == kAccumulator) {
      lexer_.Note(arg->position, "iteration variable overwrites accumulator variable");
      return std::nullopt;
    }
    return WrittenName(*arg);
  }

  absl::StatusOr<ExprPtr> MemberCall(ExprPtr target, std::string name, size_t position,
                                     std::vector<ExprPtr> args) {
    // existsOne is cel-go's newer name for exists_one (both in its standard macros).
    const bool comprehension = name == "all" || name == "exists" || name == "exists_one" ||
                               name == "existsOne" || name == "map" || name == "filter";
    if (comprehension && args.size() >= 2 && args.size() <= 3 &&
        (args.size() == 2 || name == "map")) {
      std::optional<std::string> variable = MacroVariable(args[0], name);
      if (!variable.has_value()) return Placeholder(args[0]->position);
      ExprPtr macro = Node(Expr::Kind::kMacro, position);
      macro->name = std::move(name);
      macro->variable = *std::move(variable);
      macro->operand = std::move(target);
      for (size_t i = 1; i < args.size(); ++i) macro->args.push_back(std::move(args[i]));
      return macro;
    }
    // cel-go's two-variable comprehensions: all, exists and existsOne (or exists_one) with a
    // predicate, transformList, transformMap and transformMapEntry with an optional filter and a
    // transform, over a list's indexes and items or a map's keys and values.
    const bool quantifier =
        name == "all" || name == "exists" || name == "existsOne" || name == "exists_one";
    const bool transform =
        name == "transformList" || name == "transformMap" || name == "transformMapEntry";
    if ((quantifier && args.size() == 3) || (transform && (args.size() == 3 || args.size() == 4))) {
      for (size_t i = 0; i < 2; ++i) {
        if (args[i]->kind != Expr::Kind::kIdent) {
          return Refuse(args[i]->position, "argument must be a simple name");
        }
      }
      if (WrittenName(*args[0]) == WrittenName(*args[1])) {
        return Refuse(args[1]->position,
                      absl::StrCat("duplicate variable name: ", WrittenName(*args[1])));
      }
      for (size_t i = 0; i < 2; ++i) {
        if (WrittenName(*args[i]) == kAccumulator) {
          return Refuse(args[i]->position, "iteration variable overwrites accumulator variable");
        }
      }
      ExprPtr macro = Node(Expr::Kind::kMacro, position);
      macro->name = std::move(name);
      macro->variable = WrittenName(*args[0]);
      macro->variable2 = WrittenName(*args[1]);
      macro->operand = std::move(target);
      for (size_t i = 2; i < args.size(); ++i) macro->args.push_back(std::move(args[i]));
      return macro;
    }
    // The lists extension's sortBy(variable, key): the list ordered by each item's key.
    if (name == "sortBy" && args.size() == 2) {
      const Expr::Kind kind = target->kind;
      // An index and a conditional are calls to cel-go (_[_], _?_:_).
      if (kind != Expr::Kind::kList && kind != Expr::Kind::kSelect && kind != Expr::Kind::kIdent &&
          kind != Expr::Kind::kMacro && kind != Expr::Kind::kCall && kind != Expr::Kind::kIndex &&
          kind != Expr::Kind::kCondition) {
        return Refuse(target->position,
                      "sortBy can only be applied to a list, identifier, comprehension, call or "
                      "select expression");
      }
      std::optional<std::string> variable = MacroVariable(args[0], name);
      if (!variable.has_value()) return Placeholder(args[0]->position);
      ExprPtr macro = Node(Expr::Kind::kMacro, position);
      macro->name = std::move(name);
      macro->variable = *std::move(variable);
      macro->operand = std::move(target);
      macro->args.push_back(std::move(args[1]));
      return macro;
    }
    // cel.bind of other than three arguments is no macro, and `cel` no variable (the checker's).
    if (name == "bind" && target->kind == Expr::Kind::kIdent && target->name == "cel" &&
        !target->root && args.size() == 3) {
      std::optional<std::string> variable = MacroVariable(args[0], "cel.bind");
      if (!variable.has_value()) return Placeholder(args[0]->position);
      ExprPtr macro = Node(Expr::Kind::kMacro, position);
      macro->name = "cel.bind";
      macro->variable = *std::move(variable);
      macro->operand = std::move(args[1]);
      macro->args.push_back(std::move(args[2]));
      return macro;
    }
    ExprPtr call = Call(name, position, std::move(args));
    call->operand = std::move(target);
    return call;
  }

  // ParsePrimary: `sign` is where a unary minus stands that a number literal takes in.
  absl::StatusOr<ExprPtr> ParsePrimary(std::optional<size_t> sign) {
    const size_t position = current_.position;
    const bool negate = sign.has_value();
    if (current_.out_of_range != nullptr) {
      ExprPtr refused = Refuse(sign.value_or(position), current_.out_of_range);
      if (absl::Status read = Advance(); !read.ok()) return read;
      return refused;
    }
    switch (current_.token) {
      case Token::kInt: {
        constexpr uint64_t kMinimum = uint64_t{1} << 63;  // |INT64_MIN|
        const uint64_t magnitude = current_.uint_value;
        if (magnitude > kMinimum || (magnitude == kMinimum && !negate)) {
          ExprPtr refused = Refuse(sign.value_or(position), "invalid int literal");
          if (absl::Status read = Advance(); !read.ok()) return read;
          return refused;
        }
        // A literal with its sign stands where the sign does.
        ExprPtr constant = Node(Expr::Kind::kConst, sign.value_or(position));
        constant->constant =
            Value::Int(!negate ? static_cast<int64_t>(magnitude)
                               : (magnitude == kMinimum ? std::numeric_limits<int64_t>::min()
                                                        : -static_cast<int64_t>(magnitude)));
        if (absl::Status read = Advance(); !read.ok()) return read;
        return constant;
      }
      case Token::kUint:
      case Token::kDouble:
      case Token::kString:
      case Token::kBytes:
      case Token::kTrue:
      case Token::kFalse:
      case Token::kNull: {
        ExprPtr constant = Node(Expr::Kind::kConst, sign.value_or(position));
        switch (current_.token) {
          case Token::kUint:
            constant->constant = Value::Uint(current_.uint_value);
            break;
          case Token::kDouble:
            constant->constant =
                Value::Double(negate ? -current_.double_value : current_.double_value);
            break;
          case Token::kString:
            constant->constant = Value::String(current_.text);
            break;
          case Token::kBytes:
            constant->constant = Value::BytesOf(current_.text);
            break;
          case Token::kTrue:
          case Token::kFalse:
            constant->constant = Value::Bool(current_.token == Token::kTrue);
            break;
          default:
            break;
        }
        if (absl::Status read = Advance(); !read.ok()) return read;
        return constant;
      }
      case Token::kDot:
      case Token::kIdent: {
        const bool root = current_.token == Token::kDot;
        if (root) {
          if (absl::Status read = Advance(); !read.ok()) return read;
          if (current_.token != Token::kIdent) return Unexpected();
        }
        // An identifier stands where its name starts, after a leading dot (as cel-go places it).
        const size_t name_position = current_.position;
        std::string name = current_.text;
        if (absl::Status read = Advance(); !read.ok()) return read;
        // A reserved word may name a field or a method (`m.if`, `x.as()`), not a variable or
        // a function, as in cel-go's parser, which then looks no further into the call's
        // arguments than its grammar does. A message construction (`if{}`) is refused as such.
        const bool reserved = IsReserved(name) && current_.token != Token::kLBrace;
        if (reserved) lexer_.Note(position, absl::StrCat("reserved identifier: ", name));
        const size_t noted = lexer_.errors().size();
        if (current_.token == Token::kLParen) {
          const size_t open = current_.position;
          absl::StatusOr<std::vector<ExprPtr>> args = ParseArgs(Token::kRParen, ")");
          std::vector<PlacedError>& errors = lexer_.errors();
          if (reserved) {  // of the arguments' errors, only a syntax error that ended the parse
            errors.erase(errors.begin() + noted, errors.end() - (args.ok() ? 0 : 1));
          }
          if (!args.ok()) return args.status();
          if (reserved) return Placeholder(position);
          // has() of one argument is the macro (of others, or written `.has`, a function no
          // environment has).
          if (name == "has" && !root && args->size() == 1) {
            if ((*args)[0]->kind != Expr::Kind::kSelect || (*args)[0]->optional) {
              return Refuse((*args)[0]->position, "invalid argument to has() macro");
            }
            // The presence test stands where the call opens, as cel-go's expansion places it.
            ExprPtr select = std::move((*args)[0]);
            select->test_only = true;
            select->position = open;
            return select;
          }
          ExprPtr call = Call(name, open, *std::move(args));
          call->root = root;
          return call;
        }
        if (current_.token == Token::kLBrace) {
          return lexer_.Stop(position, "message construction is not supported");
        }
        if (reserved) return Placeholder(position);
        ExprPtr ident = Node(Expr::Kind::kIdent, name_position);
        ident->name = std::move(name);
        ident->root = root;
        return ident;
      }
      case Token::kLParen: {
        if (absl::Status read = Advance(); !read.ok()) return read;
        absl::StatusOr<ExprPtr> inner = ParseExpr();
        if (!inner.ok()) return inner;
        if (absl::Status close = Expect(Token::kRParen, "')'"); !close.ok()) return close;
        return inner;
      }
      case Token::kLBracket: {
        absl::StatusOr<std::vector<ExprPtr>> items = ParseArgs(Token::kRBracket, "]", false, true);
        if (!items.ok()) return items.status();
        ExprPtr list = Node(Expr::Kind::kList, position);
        list->args = *std::move(items);
        return list;
      }
      case Token::kLBrace: {
        absl::StatusOr<std::vector<ExprPtr>> entries = ParseArgs(Token::kRBrace, "}", true, true);
        if (!entries.ok()) return entries.status();
        ExprPtr map = Node(Expr::Kind::kMap, position);
        map->args = *std::move(entries);
        return map;
      }
      default:
        return Unexpected();
    }
  }

  Lexer lexer_;
  Lexeme current_;
  int depth_ = 0;
};

}  // namespace

absl::StatusOr<ExprPtr> Parse(absl::string_view text) {
  if (text.size() > kMaxExpressionLength) {
    return absl::InvalidArgumentError(DisplayUnplacedError(
        absl::StrCat("the expression is ", text.size(), " bytes long, more than the ",
                     kMaxExpressionLength, " allowed")));
  }
  Parser parser(text);
  absl::StatusOr<ExprPtr> root = parser.ParseAll();
  if (!parser.errors().empty()) {
    std::vector<PlacedError> errors = parser.errors();
    // The error that ended the parse, last found, counts as reported first, as cel-go's grammar
    // reports its syntax errors before its parser refuses anything else (of more than 100, it
    // is kept).
    if (!root.ok()) std::rotate(errors.begin(), errors.end() - 1, errors.end());
    return absl::InvalidArgumentError(DisplayErrors(text, std::move(errors)));
  }
  if (root.ok() && TreeDepth(**root) > kMaxTreeDepth) {
    return absl::InvalidArgumentError(DisplayUnplacedError(
        absl::StrCat("the expression nests more than ", kMaxTreeDepth, " levels deep")));
  }
  return root;
}

}  // namespace devmgr::cel

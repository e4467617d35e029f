#include "agent/core/yaml_document.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/mark.h>
#include <fcntl.h>
#include <unistd.h>
#include <yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

namespace faultline {
namespace {

int LineOfOffset(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
}

Error At(const std::string& file, int line, std::string message) {
  return Error{.file = file, .line = line, .rule_id = "", .key = "", .message = std::move(message)};
}

Error AtMark(const std::string& file, const yaml_mark_t& mark, const std::string& message) {
  return At(file, static_cast<int>(mark.line) + 1,
            "invalid YAML at column " + std::to_string(mark.column + 1) + ": " + message);
}

// What libyaml says about the syntax error it stopped at.
Error SyntaxError(const yaml_parser_t& parser, std::string_view text, const std::string& file) {
  const std::string problem = parser.problem != nullptr ? parser.problem : "unreadable input";
  if (parser.error == YAML_READER_ERROR) {
    // Encoding errors come with a byte offset, not a mark.
    return At(file, LineOfOffset(text, parser.problem_offset),
              "invalid YAML at byte " + std::to_string(parser.problem_offset) + ": " + problem);
  }
  if (parser.error == YAML_MEMORY_ERROR) return At(file, 0, "invalid YAML: out of memory");
  std::string message = problem;
  if (parser.context != nullptr) {
    message += std::string(" (") + parser.context;
    if (parser.context_mark.line != parser.problem_mark.line) {
      message += " started at line " + std::to_string(parser.context_mark.line + 1);
    }
    message += ")";
  }
  return AtMark(file, parser.problem_mark, message);
}

class Parser {
 public:
  explicit Parser(std::string_view text) {
    ok_ = yaml_parser_initialize(&parser_) != 0;
    if (ok_) {
      yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                   text.size());
    }
  }
  ~Parser() {
    if (ok_) yaml_parser_delete(&parser_);
  }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  bool ok() const { return ok_; }
  const yaml_parser_t& parser() const { return parser_; }
  // False on a syntax error. The event is the caller's to delete (see Event).
  bool Next(yaml_event_t* event) { return yaml_parser_parse(&parser_, event) != 0; }

 private:
  yaml_parser_t parser_;
  bool ok_ = false;
};

struct Event {
  yaml_event_t event;
  ~Event() { yaml_event_delete(&event); }
};

std::string AnchorName(const yaml_char_t* anchor) {
  return anchor != nullptr ? reinterpret_cast<const char*>(anchor) : "";
}

// What an anchor names, for the aliases that follow it.
struct Anchor {
  bool open = false;  // a collection not yet ended: an alias to it would be inside it
  size_t size = 1;    // nodes in it, aliases expanded
  size_t number = 0;  // in the document, as Shape numbers anchors
  size_t defined_at = 0;  // the node count where it starts, which tells definitions apart
};

// An open collection, innermost last.
struct OpenCollection {
  std::string anchor;  // "" when it has none
  size_t nodes_before = 0;
};

// The structure of a stream as both parsers report it, one entry per parser event.
// `events`: D/d a document starts/ends, [/] a sequence, {/} a mapping, s a scalar, * an alias.
// `anchors`: for a node, the number of the anchor it defines (0 for none); for an alias, the
// number of the anchor it names. Anchors are numbered 1, 2, ... in each document in the order
// they are defined, a redefined name taking a new number, as yaml-cpp numbers them. Comparing
// numbers and not only events catches the parses where the two disagree about which node an
// alias names: yaml-cpp reads `&a [&a\rx, *a]` (lone CR) with the alias naming the list it is
// in, a cycle that would send every loader walking the tree into endless recursion.
struct Shape {
  std::string events;
  std::vector<size_t> anchors;

  void Add(char event, size_t anchor = 0) {
    events += event;
    anchors.push_back(anchor);
  }
};

// Checks `text` with libyaml and against the limits; returns its shape, or the first error.
// Nodes are counted with every alias expanded: a loader that reads an aliased node reads all of
// it, so `[*a, *a, ...]` over a large `&a` must count as large as it reads.
Result<Shape> Validate(std::string_view text, const std::string& file) {
  if (text.size() > kMaxYamlBytes) {
    return At(file, 0,
              "file is " + std::to_string(text.size()) + " bytes; YAML files are limited to " +
                  std::to_string(kMaxYamlBytes));
  }
  Parser parser(text);
  if (!parser.ok()) return At(file, 0, "invalid YAML: out of memory");

  Shape shape;
  size_t nodes = 0;
  std::vector<OpenCollection> open;
  std::map<std::string, Anchor, std::less<>> anchors;  // latest definition of each name
  size_t defined = 0;                                  // anchors defined in this document
  while (true) {
    Event e;
    if (!parser.Next(&e.event)) return SyntaxError(parser.parser(), text, file);
    const yaml_mark_t& mark = e.event.start_mark;
    switch (e.event.type) {
      case YAML_STREAM_END_EVENT:
        return shape;
      case YAML_DOCUMENT_START_EVENT:
        shape.Add('D');
        anchors.clear();  // anchors are per document
        defined = 0;
        break;
      case YAML_DOCUMENT_END_EVENT:
        shape.Add('d');
        break;
      case YAML_ALIAS_EVENT: {
        const std::string name = AnchorName(e.event.data.alias.anchor);
        const auto it = anchors.find(name);
        if (it == anchors.end()) {
          return AtMark(file, mark, "alias '*" + name + "' names no anchor defined before it");
        }
        if (it->second.open) {
          return AtMark(file, mark, "alias '*" + name + "' is inside the node it names");
        }
        nodes += it->second.size;
        shape.Add('*', it->second.number);
        break;
      }
      case YAML_SCALAR_EVENT: {
        size_t number = 0;
        if (e.event.data.scalar.anchor != nullptr) {
          number = ++defined;
          anchors[AnchorName(e.event.data.scalar.anchor)] =
              Anchor{.number = number, .defined_at = nodes};
        }
        ++nodes;
        shape.Add('s', number);
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        const bool sequence = e.event.type == YAML_SEQUENCE_START_EVENT;
        const yaml_char_t* anchor =
            sequence ? e.event.data.sequence_start.anchor : e.event.data.mapping_start.anchor;
        open.push_back(OpenCollection{AnchorName(anchor), nodes});
        size_t number = 0;
        if (anchor != nullptr) {
          number = ++defined;
          anchors[open.back().anchor] = Anchor{.open = true, .number = number, .defined_at = nodes};
        }
        shape.Add(sequence ? '[' : '{', number);
        if (open.size() > static_cast<size_t>(kMaxYamlDepth)) {
          return AtMark(file, mark,
                        "nested deeper than " + std::to_string(kMaxYamlDepth) + " levels");
        }
        ++nodes;
        break;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        shape.Add(e.event.type == YAML_SEQUENCE_END_EVENT ? ']' : '}');
        if (!open.empty()) {
          const OpenCollection& ended = open.back();
          // Unless a node inside it took the name over, the name now means this whole
          // collection.
          if (!ended.anchor.empty()) {
            Anchor& latest = anchors[ended.anchor];
            if (latest.defined_at == ended.nodes_before) {
              latest = Anchor{.size = nodes - ended.nodes_before,
                              .number = latest.number,
                              .defined_at = ended.nodes_before};
            }
          }
          open.pop_back();
        }
        break;
      default:
        break;
    }
    if (nodes > kMaxYamlNodes) {
      return AtMark(file, mark,
                    "more than " + std::to_string(kMaxYamlNodes) +
                        " values, aliases counted as the values they name; YAML files are "
                        "limited to that many");
    }
  }
}

int LineOf(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.line + 1; }

std::string KindOf(char event) {
  switch (event) {
    case 'D':
      return "a document";
    case 'd':
      return "the end of a document";
    case '[':
      return "a list";
    case ']':
      return "the end of a list";
    case '{':
      return "a map";
    case '}':
      return "the end of a map";
    case 's':
      return "a single value";
    case '*':
      return "an alias";
  }
  return "the end of the file";
}

// Thrown out of yaml-cpp's parser by ShapeCheck at the first event that libyaml did not report.
struct ShapeMismatch {
  YAML::Mark mark;
  char expected;
  char got;
  bool anchor_differs = false;  // same event, but it defines or names another anchor
};

// Follows yaml-cpp's parse event by event against libyaml's shape. yaml-cpp's parser unwinds
// cleanly from an exception thrown by its handler (it throws its own from the same depth), so a
// parse that goes astray, and in particular one that would repeat an empty document forever, is
// stopped at its first wrong event.
class ShapeCheck : public YAML::EventHandler {
 public:
  explicit ShapeCheck(const Shape& shape) : shape_(shape) {}

  void OnDocumentStart(const YAML::Mark& mark) override { Expect('D', mark); }
  void OnDocumentEnd() override { Expect('d', mark_); }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Expect('s', mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Expect('*', mark, anchor);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Expect('s', mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Expect('[', mark, anchor);
  }
  void OnSequenceEnd() override { Expect(']', mark_); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Expect('{', mark, anchor);
  }
  void OnMapEnd() override { Expect('}', mark_); }

  // After the last document: yaml-cpp must have reported everything libyaml did.
  void ExpectEnd() const {
    if (next_ != shape_.events.size()) throw ShapeMismatch{mark_, shape_.events[next_], '\0'};
  }

 private:
  void Expect(char event, const YAML::Mark& mark, YAML::anchor_t anchor = YAML::NullAnchor) {
    mark_ = mark;
    if (next_ >= shape_.events.size() || shape_.events[next_] != event) {
      throw ShapeMismatch{mark, next_ < shape_.events.size() ? shape_.events[next_] : '\0',
                          event};
    }
    if (shape_.anchors[next_] != anchor) throw ShapeMismatch{mark, event, event, true};
    ++next_;
  }

  const Shape& shape_;
  size_t next_ = 0;
  YAML::Mark mark_ = YAML::Mark::null_mark();  // of the last event that has one
};

// Runs yaml-cpp's parser over `text` without building nodes; an error unless it reports exactly
// `shape`. When this passes, LoadAll over the same text runs the same parse and ends.
std::optional<Error> CheckYamlCppAgrees(std::string_view text, const Shape& shape,
                                        const std::string& file) {
  std::istringstream in{std::string(text)};
  ShapeCheck check(shape);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(check)) {
    }
    check.ExpectEnd();
  } catch (const ShapeMismatch& m) {
    const std::string difference =
        m.anchor_differs ? "the two disagree about which anchor " + KindOf(m.got) +
                               " defines or names"
                         : "libyaml finds " + KindOf(m.expected) + " where yaml-cpp finds " +
                               KindOf(m.got);
    return At(file, LineOf(m.mark),
              "yaml-cpp 0.7 reads this YAML differently from the YAML reference parser (" +
                  difference +
                  (m.mark.is_null() ? "" : ", column " + std::to_string(m.mark.column + 1)) +
                  "); quote the value or write it more plainly");
  } catch (const YAML::Exception& e) {
    // libyaml accepted it but yaml-cpp does not (yaml-cpp is stricter in a few corners).
    return At(file, LineOf(e.mark), "invalid YAML: " + e.msg);
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<YAML::Node>> ParseYamlDocuments(std::string_view text,
                                                    const std::string& file) {
  Result<Shape> shape = Validate(text, file);
  if (!shape.ok()) return shape.errors();
  if (std::optional<Error> error = CheckYamlCppAgrees(text, shape.value(), file)) return *error;
  try {
    return YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return At(file, LineOf(e.mark), "invalid YAML: " + e.msg);
  }
}

Result<std::string> ReadYamlFile(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return At(path, 0, "cannot open " + what + ": " + std::strerror(errno));
  std::string text;
  char buffer[64 * 1024];
  while (text.size() <= kMaxYamlBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int read_errno = errno;
      ::close(fd);
      return At(path, 0, "cannot read " + what + ": " + std::strerror(read_errno));
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (text.size() > kMaxYamlBytes) {
    return At(path, 0,
              "file is over " + std::to_string(kMaxYamlBytes) + " bytes; a " + what +
                  " is limited to that many");
  }
  return text;
}

std::optional<int64_t> DecimalInteger(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

Result<YAML::Node> ParseYamlDocument(std::string_view text, const std::string& file) {
  Result<std::vector<YAML::Node>> documents = ParseYamlDocuments(text, file);
  if (!documents.ok()) return documents.errors();
  std::vector<YAML::Node>& nodes = documents.value();
  if (nodes.empty()) return YAML::Node(YAML::NodeType::Null);
  if (nodes.size() > 1) {
    return At(file, LineOf(nodes[1].Mark()),
              "a second YAML document ('---') here; this file holds one document");
  }
  return nodes.front();
}

}  // namespace faultline

#include "http/response_parser.h"

#include <algorithm>
#include <optional>

namespace kgpu::http {

namespace {

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Field values and reason phrases: visible characters, obs-text, space and tab; no other controls.
bool is_text_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u == '\t' || (u >= 0x20 && u != 0x7f);
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) out += (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) ? c : '?';
  if (s.size() > 64) out += "...";
  return out;
}

Result<uint64_t> parse_content_length(std::string_view value) {
  // Repeated headers arrive joined with ", "; they must all say the same.
  std::optional<uint64_t> length;
  while (true) {
    const size_t comma = value.find(',');
    std::string_view item = trim(value.substr(0, comma));
    if (item.empty() || item.size() > 18 ||
        !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return Error::unavailable("Content-Length '" + printable(item) + "' is not a decimal number below 10^18");
    uint64_t n = 0;
    for (char c : item) n = n * 10 + static_cast<uint64_t>(c - '0');
    if (length && *length != n) return Error::unavailable("conflicting Content-Length headers");
    length = n;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return *length;
}

}  // namespace

Result<ResponseHead> parse_status_line(std::string_view line) {
  const auto bad = [&](const std::string& why) {
    return Error::unavailable("malformed status line '" + printable(line) + "': " + why);
  };
  if (line.size() < 12 || !line.starts_with("HTTP/1.") || (line[7] != '0' && line[7] != '1') || line[8] != ' ')
    return bad("expected 'HTTP/1.0' or 'HTTP/1.1', a space and a 3-digit status");
  ResponseHead head;
  head.version_minor = line[7] - '0';
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') return bad("the status is not 3 digits");
    status = status * 10 + (line[i] - '0');
  }
  if (status < 100 || status > 599) return bad("status outside 100..599");
  head.status = status;
  if (line.size() > 12) {
    if (line[12] != ' ') return bad("no space after the status");
    std::string_view reason = line.substr(13);
    if (!std::all_of(reason.begin(), reason.end(), is_text_char)) return bad("control character in the reason");
    head.reason = std::string(reason);
  }
  return head;
}

Result<ResponseHead> parse_response_head(std::string_view block) {
  if (block.size() > kMaxHeaderBlock)
    return Error::unavailable("response header block larger than " + std::to_string(kMaxHeaderBlock) + " bytes");
  size_t eol = block.find("\r\n");
  auto head = parse_status_line(block.substr(0, eol));
  if (!head) return head;
  while (eol != std::string_view::npos) {
    block.remove_prefix(eol + 2);
    eol = block.find("\r\n");
    const std::string_view line = block.substr(0, eol);
    const auto bad = [&](const std::string& why) {
      return Error::unavailable("malformed header line '" + printable(line) + "': " + why);
    };
    if (line.empty()) return bad("empty line inside the header block");
    if (line.front() == ' ' || line.front() == '\t') return bad("obsolete line folding is not accepted");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return bad("no ':'");
    const std::string_view name = line.substr(0, colon);
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_tchar)) return bad("the name is not a token");
    const std::string_view value = trim(line.substr(colon + 1));
    if (!std::all_of(value.begin(), value.end(), is_text_char)) return bad("control character in the value");
    std::string key(name);
    std::transform(key.begin(), key.end(), key.begin(), lower);
    auto [it, inserted] = head->headers.try_emplace(std::move(key), value);
    if (!inserted) it->second.append(", ").append(value);
  }
  return head;
}

Result<uint64_t> parse_chunk_size_line(std::string_view line) {
  const auto bad = [&](const std::string& why) {
    return Error::unavailable("malformed chunk-size line '" + printable(line) + "': " + why);
  };
  if (line.size() > kMaxChunkSizeLine) return bad("longer than " + std::to_string(kMaxChunkSizeLine) + " bytes");
  size_t digits = 0;
  uint64_t size = 0;
  for (; digits < line.size(); ++digits) {
    const char c = lower(line[digits]);
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else break;
    if (digits == 15) return bad("chunk size above 15 hex digits");
    size = size * 16 + static_cast<uint64_t>(v);
  }
  if (digits == 0) return bad("no hex chunk size");
  std::string_view rest = trim(line.substr(digits));
  if (!rest.empty()) {
    // chunk-ext: ";name[=value]..." — accepted and ignored, but no control characters.
    if (rest.front() != ';') return bad("unexpected text after the size");
    if (!std::all_of(rest.begin(), rest.end(), is_text_char)) return bad("control character in an extension");
  }
  return size;
}

Result<BodyFraming> body_framing(const ResponseHead& head, std::string_view method) {
  BodyFraming framing;
  if (method == "HEAD" || head.status < 200 || head.status == 204 || head.status == 304) return framing;
  const auto te = head.headers.find("transfer-encoding");
  const auto cl = head.headers.find("content-length");
  if (te != head.headers.end()) {
    std::string coding(trim(te->second));
    std::transform(coding.begin(), coding.end(), coding.begin(), lower);
    if (coding != "chunked")
      return Error::unavailable("unsupported Transfer-Encoding '" + printable(te->second) + "' (only chunked)");
    if (cl != head.headers.end())
      return Error::unavailable("both Transfer-Encoding and Content-Length in one response");
    framing.kind = BodyFraming::Kind::Chunked;
    return framing;
  }
  if (cl != head.headers.end()) {
    auto length = parse_content_length(cl->second);
    if (!length) return length.error();
    framing.kind = BodyFraming::Kind::Length;
    framing.length = *length;
    return framing;
  }
  framing.kind = BodyFraming::Kind::UntilClose;
  return framing;
}

Result<ResponseParser::State> ResponseParser::deliver(std::string_view bytes, const BodySink& sink) {
  if (!bytes.empty() && !sink(bytes)) state_ = State::Stopped;
  return state_;
}

Result<size_t> ResponseParser::feed_head(std::string_view data) {
  const size_t old = pending_.size();
  pending_.append(data);
  const size_t end = pending_.find("\r\n\r\n", old >= 3 ? old - 3 : 0);
  if (end == std::string::npos) {
    if (pending_.size() > kMaxHeaderBlock + 3)
      return Error::unavailable("no end of the response header block within " + std::to_string(kMaxHeaderBlock) +
                                " bytes");
    return data.size();
  }
  auto head = parse_response_head(std::string_view(pending_).substr(0, end));
  if (!head) return head.error();
  const size_t consumed = end + 4 - old;
  pending_.clear();
  if (head->status == 101) return Error::unavailable("unexpected 101 Switching Protocols");
  if (head->status < 200) return consumed;  // an interim answer: the real one follows
  auto framing = body_framing(*head, method_);
  if (!framing) return framing.error();
  head_ = std::move(*head);
  framing_ = *framing;
  state_ = State::Body;
  remaining_ = framing_.length;
  if (framing_.kind == BodyFraming::Kind::None ||
      (framing_.kind == BodyFraming::Kind::Length && framing_.length == 0))
    state_ = State::Complete;
  return consumed;
}

Result<size_t> ResponseParser::feed_chunked(std::string_view data, const BodySink& sink) {
  switch (chunk_) {
    case Chunk::SizeLine:
    case Chunk::Trailers: {
      const size_t lf = data.find('\n');
      const size_t take = lf == std::string_view::npos ? data.size() : lf + 1;
      const size_t cap = chunk_ == Chunk::SizeLine ? kMaxChunkSizeLine + 2 : kMaxHeaderBlock;
      if (pending_.size() + take > cap || trailer_bytes_ + take > kMaxHeaderBlock)
        return Error::unavailable(chunk_ == Chunk::SizeLine ? "chunk-size line longer than " +
                                                                  std::to_string(kMaxChunkSizeLine) + " bytes"
                                                            : "chunked trailers larger than " +
                                                                  std::to_string(kMaxHeaderBlock) + " bytes");
      pending_.append(data.substr(0, take));
      if (lf == std::string_view::npos) return take;
      if (pending_.size() < 2 || pending_[pending_.size() - 2] != '\r')
        return Error::unavailable("chunked framing: a line ends without CRLF");
      std::string_view line = std::string_view(pending_).substr(0, pending_.size() - 2);
      if (chunk_ == Chunk::Trailers) {
        trailer_bytes_ += pending_.size();
        if (line.empty()) {
          state_ = State::Complete;
        } else if (auto trailer = parse_response_head("HTTP/1.1 200 \r\n" + std::string(line)); !trailer) {
          return Error::unavailable("malformed chunked trailer: " + trailer.error().message);
        }
        pending_.clear();
        return take;
      }
      auto size = parse_chunk_size_line(line);
      if (!size) return size.error();
      pending_.clear();
      remaining_ = *size;
      chunk_ = *size == 0 ? Chunk::Trailers : Chunk::Data;
      return take;
    }
    case Chunk::Data: {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size()));
      remaining_ -= take;
      if (remaining_ == 0) chunk_ = Chunk::DataCrlf;
      auto delivered = deliver(data.substr(0, take), sink);
      if (!delivered) return delivered.error();
      return take;
    }
    case Chunk::DataCrlf: {
      const size_t take = std::min<size_t>(2 - pending_.size(), data.size());
      pending_.append(data.substr(0, take));
      if (pending_.size() == 2) {
        if (pending_ != "\r\n") return Error::unavailable("chunked framing: no CRLF after a chunk's data");
        pending_.clear();
        chunk_ = Chunk::SizeLine;
      } else if (pending_ != "\r") {
        return Error::unavailable("chunked framing: no CRLF after a chunk's data");
      }
      return take;
    }
  }
  return Error::internal("chunked framing: unknown state");
}

Result<ResponseParser::State> ResponseParser::feed(std::string_view data, const BodySink& sink) {
  while (!data.empty() && (state_ == State::Head || state_ == State::Body)) {
    Result<size_t> consumed = size_t{0};
    if (state_ == State::Head) {
      consumed = feed_head(data);
    } else if (framing_.kind == BodyFraming::Kind::Chunked) {
      consumed = feed_chunked(data, sink);
    } else {
      size_t take = data.size();
      if (framing_.kind == BodyFraming::Kind::Length) {
        take = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size()));
        remaining_ -= take;
        if (remaining_ == 0) state_ = State::Complete;
      }
      auto delivered = deliver(data.substr(0, take), sink);
      if (!delivered) return delivered;
      consumed = take;
    }
    if (!consumed) return consumed.error();
    data.remove_prefix(*consumed);
  }
  return state_;
}

Result<ResponseParser::State> ResponseParser::finish() {
  if (state_ == State::Complete || state_ == State::Stopped) return state_;
  if (state_ == State::Head)
    return Error::unavailable(pending_.empty() ? "connection closed without an answer"
                                               : "connection closed inside the response headers");
  switch (framing_.kind) {
    case BodyFraming::Kind::UntilClose:
      state_ = State::Complete;
      return state_;
    case BodyFraming::Kind::Length:
      return Error::unavailable("connection closed " + std::to_string(remaining_) + " bytes before the end of a " +
                                std::to_string(framing_.length) + "-byte body");
    default:
      return Error::unavailable("connection closed inside a chunked body");
  }
}

}  // namespace kgpu::http

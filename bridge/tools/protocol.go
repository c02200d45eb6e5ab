package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// The wire format: NDJSON, one connection per tool call (reference
// workflows-handoff.md §6, with a token added).
//
//	client → server  {"token":"…","toolCallId":"…","name":"…","params":{…}}   exactly one line
//	server → client  {"type":"update","value":<partial ToolResult>}              zero or more
//	server → client  {"type":"result","value":<ToolResult>}                      then close, or
//	server → client  {"type":"error","error":"<message>"}                        then close
//
// The client sends nothing after its request line and keeps the connection
// open until the answer: closing it (or sending more) aborts the call.

// MaxRequestLine bounds the request line, newline included. The line is
// read in full before its token can be checked, so the bound is what a
// caller of our uid without the token can make us hold per connection. A
// tool call's params come from one model response, and the largest model
// outputs are around 128k tokens (about 0.5 MB of text, at most twice that
// once JSON-escaped): 4 MiB leaves room without letting a runaway client
// grow memory without end.
const MaxRequestLine = 4 << 20

// Field bounds: generous for real use, small enough to keep logs sane.
const (
	maxToken      = 128
	maxToolCallID = 512
	maxName       = 128
)

// Message types of the server's lines.
const (
	TypeUpdate = "update"
	TypeResult = "result"
	TypeError  = "error"
)

// Request is the client's one line.
type Request struct {
	Token      string          `json:"token"`
	ToolCallID string          `json:"toolCallId"`
	Name       string          `json:"name"`
	Params     json.RawMessage `json:"params"`
}

// ErrRequestTooLong is returned for a request line over MaxRequestLine.
var ErrRequestTooLong = fmt.Errorf("request line longer than %d bytes", MaxRequestLine)

// DecodeRequest parses a request line (with or without its newline) and
// checks every field. Params must be a JSON object. It never panics,
// whatever the bytes (FuzzDecodeRequest).
func DecodeRequest(line []byte) (Request, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if len(line) >= MaxRequestLine {
		return Request{}, ErrRequestTooLong
	}
	if !utf8.Valid(line) {
		return Request{}, errors.New("not UTF-8")
	}
	var r Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, fmt.Errorf("not a request object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF { // More lets a stray "}" by
		return Request{}, errors.New("more than one JSON value on the line")
	}
	switch {
	case r.Token == "":
		return Request{}, errors.New("no token")
	case len(r.Token) > maxToken || !control.Printable(r.Token):
		return Request{}, errors.New("malformed token")
	case r.Name == "":
		return Request{}, errors.New("no tool name")
	case len(r.Name) > maxName || !control.Printable(r.Name):
		return Request{}, fmt.Errorf("malformed tool name %q", control.Clip(r.Name))
	case r.ToolCallID == "":
		return Request{}, errors.New("no toolCallId")
	case len(r.ToolCallID) > maxToolCallID || !control.Printable(r.ToolCallID):
		return Request{}, errors.New("malformed toolCallId")
	}
	params := bytes.TrimSpace(r.Params)
	if len(params) == 0 || params[0] != '{' {
		return Request{}, errors.New("params must be a JSON object")
	}
	r.Params = params
	return r, nil
}

// message is one server line.
type message struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value,omitempty"`
	Error string          `json:"error,omitempty"`
}

// encode renders m as a line, newline included. A value that is not valid
// JSON is an error (json.Marshal checks raw values).
func encode(m message) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// checkToolResult checks that v has the shape Pi needs from a tool's result
// or partial result (an object with a content array), so that a mistake in
// the owner reaches the pane as a clear error instead of a broken render.
func checkToolResult(v json.RawMessage) error {
	var r struct {
		Content *[]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(v, &r); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	if r.Content == nil {
		return errors.New("no content array")
	}
	return nil
}

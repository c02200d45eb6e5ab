package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/termtext"
)

// The wire format: one JSON object per line (NDJSON), in both directions.
//
//	client → server  {"type":"hello","token":"…","role":"probe"|"client","pid":N,"version":1,"herdr_pi":"v1.2.3 (…)"[,"dialogs":true][,"handoff":true]}
//	server → client  {"type":"hello","ok":true,"version":1,"herdr_pi":"…"}   or {"type":"error","error":"…"} and close
//	probe  → server  {"type":"event","name":"agent_start","data":{…}}           (no answer)
//	probe  → server  {"type":"event","name":"herdr:blocked","seq":N,"data":{…}} (a channel event, numbered)
//	client → server  {"type":"request","id":"1","method":"status"|"waiting","params":{…}}
//	server → client  {"type":"response","id":"1","ok":true,"result":{…}}  or  "ok":false,"error":"…"
//
// The handoff request's answer streams ("progress" lines before its
// response, a "cancel" from the client): see handoff_stream.go.
//
// A probe that finds the workflow engine in its Pi opens a third kind of
// connection, the owner link (role "owner", version 2): both sides speak on
// it, with the message types and payloads described in owner.go.
//
// The first line of a connection must be a hello carrying the run's token.
// A line that does not decode, or is longer than MaxLine, ends the
// connection; the server keeps serving everyone else.
//
// A client may write several requests (its hello too) before it reads:
// each is answered, in the order written. The server reads the next one
// only while few of its answers wait unread (maxUnread), so a client that
// writes a batch gets the rest as it reads, and one that never reads is
// answered that far and no further (see Server.awaitReader).
//
// A batch larger than the client's own socket holds (some 550 short
// requests written one by one) needs a client that reads while it writes
// (socat does): one that blocks writing before it reads waits for the
// server as the server waits for it, until IdleTimeout closes it.

// Both hellos name their build (herdr_pi, absent from older builds'):
// see skew.go for what each side does with the other's.

// ProtocolVersion is the version hello lines carry.
const ProtocolVersion = 1

// MaxLine is the longest line (newline included) either side accepts. The
// probe shortens long strings in the payloads it forwards to stay below it.
const MaxLine = 64 << 10

// Roles a connection can say it has.
const (
	RoleProbe  = "probe"
	RoleClient = "client"
)

// Message types.
const (
	TypeHello    = "hello"
	TypeError    = "error"
	TypeEvent    = "event"
	TypeRequest  = "request"
	TypeResponse = "response"
)

// Request methods.
const (
	MethodStatus  = "status"
	MethodWaiting = "waiting"
)

// Message is one line of the protocol. Which fields matter depends on Type.
type Message struct {
	Type    string          `json:"type"`
	Token   string          `json:"token,omitempty"`
	Role    string          `json:"role,omitempty"`
	PID     int             `json:"pid,omitempty"`
	Version int             `json:"version,omitempty"`
	Name    string          `json:"name,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	ID      string          `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	OK      bool            `json:"ok,omitempty"`
	Error   string          `json:"error,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	// Seq numbers a channel event the probe sends (1, 2, … for each Pi
	// process), which it may write again on its next connection: the
	// server delivers each number once (see Server.deliverProbeEvent).
	// 0: not numbered (a probe before the numbers, or another event).
	Seq int64 `json:"seq,omitempty"`
	// HerdrPi, in a hello, names the sender's build ([Build]); absent
	// from builds older than the field.
	HerdrPi string `json:"herdr_pi,omitempty"`
	// Dialogs, in a probe's hello: the Pi it runs in tells it of its own
	// dialogs, which it reports (ui_prompt_start). See
	// [ProbeConnected].Dialogs.
	Dialogs bool `json:"dialogs,omitempty"`
	// Handoff, in a client's hello: its request will be a handoff
	// (`herdr-pi open`). It keeps its place on a crowded socket from the
	// hello on, as it will while the handoff runs (see Server.silentest):
	// a handoff is not asked twice. Builds older than the field ignore it.
	Handoff bool `json:"handoff,omitempty"`
}

// ErrLineTooLong is returned for a line over MaxLine.
var ErrLineTooLong = errors.New("line too long")

// Field length limits: generous for real use, small enough that a hostile
// line cannot make us keep much.
const (
	maxToken  = 128
	maxName   = 128
	maxID     = 64
	maxMethod = 32
	maxError  = 1024
)

// Decode parses one protocol line (without or with its trailing newline)
// and checks the fields its type requires. It never panics, whatever the
// bytes (FuzzDecode).
func Decode(line []byte) (Message, error) { return decode(line, MaxLine) }

// DecodeOwner is [Decode] for the owner link: longer lines (up to
// [MaxOwnerLine]) and only the owner link's message types.
func DecodeOwner(line []byte) (Message, error) {
	m, err := decode(line, MaxOwnerLine)
	if err != nil {
		return Message{}, err
	}
	if _, ok := ownerTypes[m.Type]; !ok {
		return Message{}, fmt.Errorf("%q is not an owner link message", Clip(m.Type))
	}
	return m, nil
}

func decode(line []byte, limit int) (Message, error) {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) >= limit {
		return Message{}, ErrLineTooLong
	}
	if !utf8.Valid(line) {
		return Message{}, errors.New("not UTF-8")
	}
	var m Message
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF { // More lets a stray "}" by
		return Message{}, errors.New("more than one JSON value on a line")
	}
	if err := m.validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

func (m Message) validate() error {
	switch m.Type {
	case TypeHello:
		if m.Token == "" && !m.OK {
			return errors.New("hello without a token")
		}
		if len(m.Token) > maxToken || !Printable(m.Token) {
			return errors.New("hello with a malformed token")
		}
		if len(m.HerdrPi) > maxBuild || !Printable(m.HerdrPi) {
			return errors.New("hello with a malformed build")
		}
		if m.Role != "" && m.Role != RoleProbe && m.Role != RoleClient && m.Role != RoleOwner {
			return fmt.Errorf("hello with unknown role %q", Clip(m.Role))
		}
	case TypeError:
		if len(m.Error) > maxError {
			return errors.New("error text too long")
		}
	case TypeEvent:
		if m.Name == "" || len(m.Name) > maxName || !Printable(m.Name) {
			return errors.New("event without a proper name")
		}
	case TypeRequest:
		if len(m.ID) > maxID || !Printable(m.ID) {
			return errors.New("request with a malformed id")
		}
		if m.Method == "" || len(m.Method) > maxMethod || !Printable(m.Method) {
			return errors.New("request without a proper method")
		}
	case TypeResponse:
		if len(m.ID) > maxID || !Printable(m.ID) {
			return errors.New("response with a malformed id")
		}
		if len(m.Error) > maxError {
			return errors.New("error text too long")
		}
	case TypeProgress, TypeCancel:
		if m.ID == "" || len(m.ID) > maxID || !Printable(m.ID) {
			return fmt.Errorf("%s with a malformed id", m.Type)
		}
		if (m.Type == TypeProgress) != (len(m.Data) > 0) || (len(m.Data) > 0 && !isJSONObject(m.Data)) {
			return fmt.Errorf("%s: data must be a JSON object exactly for progress", m.Type)
		}
	case "":
		return errors.New("message without a type")
	default:
		t, ok := ownerTypes[m.Type]
		if !ok {
			return &unknownTypeError{Type: m.Type}
		}
		return m.validateOwner(t.needsID)
	}
	return nil
}

// validateOwner checks an owner link line's frame: an id where the type
// needs one, a payload that is a JSON object, and nothing of the other
// message kinds. ParseOwnerMessage checks the payload itself.
func (m Message) validateOwner(needsID bool) error {
	if (needsID && m.ID == "") || len(m.ID) > maxID || !Printable(m.ID) {
		return fmt.Errorf("%s with a malformed id", m.Type)
	}
	if len(m.Data) > 0 && !isJSONObject(m.Data) {
		return fmt.Errorf("%s: data is not a JSON object", m.Type)
	}
	if m.Token != "" || m.Role != "" || m.Name != "" || m.Method != "" || len(m.Params) > 0 || len(m.Result) > 0 || m.OK || m.Error != "" || m.PID != 0 || m.Version != 0 || m.Seq != 0 || m.HerdrPi != "" {
		return fmt.Errorf("%s carries fields of another message kind", m.Type)
	}
	return nil
}

// Encode renders m as one protocol line, newline included.
func Encode(m Message) ([]byte, error) { return encode(m, MaxLine) }

// EncodeOwner is [Encode] for the owner link's longer lines.
func EncodeOwner(m Message) ([]byte, error) { return encode(m, MaxOwnerLine) }

func encode(m Message, limit int) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(b)+1 > limit {
		return nil, ErrLineTooLong
	}
	return append(b, '\n'), nil
}

// Printable is true for text that may reach a terminal as it is: none of
// what [termtext.Harmful] refuses (controls, invalid bytes, the bidi
// controls). Ids, names, tokens and labels end up in logs, file names,
// error messages and herdr-pi's own output (close prints a ledger
// record's id as it is), where a bidi override would make the rest of the
// line read backwards.
func Printable(s string) bool {
	for _, r := range s {
		if termtext.Harmful(r) {
			return false
		}
	}
	return true
}

// PrintableLabel is the rule for a label a person or a workflow wrote
// (an agent's label, a session's, a breadcrumb): no control characters
// and valid UTF-8, as for ids, but the bidi controls are let through.
// Right-to-left text carries marks such as U+200F legitimately, and
// refusing them would refuse the handoff of an agent named in Arabic or
// Hebrew; every place a label is shown cleans them instead (the
// placement's labels and title, notifications, status).
func PrintableLabel(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// Clip shortens untrusted text for a log line or an error message, on a
// character boundary, and makes it harmless on a terminal by the
// project's one rule ([termtext.Harmful]: controls, invalid bytes, bidi
// controls), each such character shown as '?'. Text for the caller of a
// request is not clipped (see printableLong): a person or a script reads
// all of it.
func Clip(s string) string {
	const n = 80
	if len(s) > n {
		s = clipLong(s, n) + "…"
	}
	return strings.Map(func(r rune) rune {
		if termtext.Harmful(r) {
			return '?'
		}
		return r
	}, s)
}

package osc

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// Protocol is a terminal notification protocol.
type Protocol string

// The protocols herdr-pi speaks (notifications-and-sentinel.md §3.2).
const (
	OSC9   Protocol = "osc9"   // iTerm2's: the message only
	OSC99  Protocol = "osc99"  // kitty's: key=value metadata, then the payload
	OSC777 Protocol = "osc777" // rxvt's notify extension: title and body
)

// Protocols lists every valid protocol name, for messages.
var Protocols = []Protocol{OSC9, OSC99, OSC777}

// ParseProtocol accepts a protocol name exactly as written in config files.
func ParseProtocol(s string) (Protocol, bool) {
	for _, p := range Protocols {
		if s == string(p) {
			return p, true
		}
	}
	return "", false
}

const (
	osc = "\x1b]"
	// st is the 7-bit String Terminator; the seed never ends a sequence
	// with BEL (notifications-and-sentinel.md §3.1).
	st = "\x1b\\"
)

// Notification is what one sequence says. All three fields are untrusted:
// the encoders sanitise them.
type Notification struct {
	Title string
	Body  string
	// ID names the notification for OSC 99, where a later one with the same
	// id replaces it.
	ID string
}

// Encode returns the one sequence that shows n with protocol p, or nil when
// there is nothing to show: the body falls back to the title, and with both
// empty after sanitising nothing is written (notifications-and-sentinel.md
// §3.2). An unknown protocol is a programming error and panics.
func Encode(p Protocol, n Notification) []byte {
	title, body := Sanitize(n.Title), Sanitize(n.Body)
	if body == "" {
		body = title
	}
	if body == "" {
		return nil
	}
	var b bytes.Buffer
	b.WriteString(osc)
	switch p {
	case OSC9:
		b.WriteString("9;" + body)
	case OSC99:
		// Only the body chunk, no title chunk and no d key: kitty then uses
		// the body as the title (notifications-and-sentinel.md §3.2, §22.5).
		b.WriteString("99;i=" + SanitizeIdentifier(n.ID) + ":p=body;" + body)
	case OSC777:
		if title == "" {
			title = "Pi"
		}
		b.WriteString("777;notify;" + title + ";" + body)
	default:
		panic(fmt.Sprintf("osc: unknown protocol %q", p))
	}
	b.WriteString(st)
	return b.Bytes()
}

// SanitizeIdentifier turns any text into an OSC 99 identifier: [Sanitize],
// then every character outside [A-Za-z0-9._-] becomes '-', runs of '-'
// collapse, the ends lose their '-', and an empty result is "pi"
// (notifications-and-sentinel.md §3.2). "0" also becomes "pi": kitty
// reserves i=0 (§22.4, §27 item 5).
func SanitizeIdentifier(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range Sanitize(s) {
		ok := r == '.' || r == '_' || (r >= '0' && r <= '9') || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z')
		if !ok {
			dash = true
			continue
		}
		if dash && b.Len() > 0 {
			b.WriteByte('-')
		}
		dash = false
		b.WriteRune(r)
	}
	id := b.String()
	if id == "" || id == "0" {
		return "pi"
	}
	return id
}

// Emit writes seq in one Write call, so the sequence cannot be split by
// another writer that also writes whole chunks. A writer failure is
// returned, never raised.
func Emit(w io.Writer, seq []byte) error {
	if len(seq) == 0 {
		return nil
	}
	n, err := w.Write(seq)
	if err == nil && n < len(seq) {
		err = io.ErrShortWrite
	}
	return err
}

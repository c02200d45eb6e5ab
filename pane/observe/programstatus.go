package observe

import (
	"bytes"
	"encoding/base64"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/pane/state"
)

// Pi ≥ 1.1 reports its own state in its output as OSC 7501 sequences
// (the Program Status Protocol; pi-agent.md §10):
//
//	ESC ] 7501 ; state=<s>[:app=<a>][:kind=<k>][:msg=<base64>] ESC \
//
// It writes them after the terminal answered the same sequence's query
// (ESC ] 7501 ; ? ESC \), or always with PI_PROGRAM_STATUS=1. herdr-pi only
// reads them: the copy loop has passed every byte to the outer terminal
// before they get here, the query included, and nothing here writes to
// the agent, so whether Pi reports stays between Pi and the terminal the
// person uses.

// statusIntro begins every OSC 7501 sequence, reports and queries alike.
var statusIntro = []byte("\x1b]7501;")

// maxStatusBody bounds what is held of one sequence's body: Pi's longest
// report (a 2048-byte message is 2732 base64 bytes, plus state, app and
// kind) fits with room; anything longer is not a report, and a stream
// that opens a sequence and never ends it costs no more than this.
const maxStatusBody = 4096

// maxStatusMessage is the decoded message's limit in the protocol.
const maxStatusMessage = 2048

// statusScanner finds status reports in output that arrives in chunks cut
// anywhere. Where a chunk has no ESC]7501; the cost is a vectorised
// search (findIntro; no work per byte in Go) and a look at its last six
// bytes for a cut beginning of one; bytes are examined one by one only
// inside a sequence. Not safe for concurrent use.
type statusScanner struct {
	// held is a sequence begun in an earlier chunk: a beginning of the
	// intro, or the whole intro and the body so far (possibly ending in the
	// ESC of a cut ESC \). Empty when nothing is pending.
	held []byte
}

// reset forgets a pending sequence: the bytes that would have continued it
// were lost.
func (s *statusScanner) reset() { s.held = s.held[:0] }

// scan reads one chunk, calling emit for each complete report in it.
func (s *statusScanner) scan(p []byte, emit func(state.ProgramStatus)) {
	for len(p) > 0 {
		if len(s.held) > 0 {
			p = s.resume(p, emit)
			continue
		}
		i := findIntro(p)
		if i < 0 {
			s.holdCutIntro(p)
			return
		}
		s.held = append(s.held[:0], statusIntro...)
		p = p[i+len(statusIntro):]
	}
}

// findIntro returns where the first whole intro in p begins, or -1. It
// looks for "]7501;" and then for the ESC before it: the search stops at
// each byte equal to the pattern's first, and ']' is rare in any output
// (one in 250 bytes of Pi's, none in base64 or in most text, one in 256 of
// random bytes), where ESC is one byte in 16 of Pi's and '7' one in 64 of
// base64 (a flood of which then cost the copy loop a search restarted every
// 64 bytes: 8x the time of this one). An intro cut within its ESC ] is held
// by holdCutIntro, so a match at p's first byte has no whole intro.
func findIntro(p []byte) int {
	const lead = 1 // ESC
	for off := 0; ; {
		j := bytes.Index(p[off:], statusIntro[lead:])
		if j < 0 {
			return -1
		}
		if j += off; j >= lead && p[j-1] == 0x1b {
			return j - lead
		}
		off = j + 1
	}
}

// holdCutIntro keeps the end of a chunk when it is a beginning of the
// intro. The intro has one ESC, at its start, so only the last ESC of the
// chunk's last len(intro)-1 bytes can begin one.
func (s *statusScanner) holdCutIntro(p []byte) {
	tail := p[max(0, len(p)-(len(statusIntro)-1)):]
	k := bytes.LastIndexByte(tail, 0x1b)
	if k >= 0 && bytes.HasPrefix(statusIntro, tail[k:]) {
		s.held = append(s.held[:0], tail[k:]...)
	}
}

// resume continues the held sequence with p and returns what of p is left
// to scan afresh.
func (s *statusScanner) resume(p []byte, emit func(state.ProgramStatus)) []byte {
	if n := len(s.held); n < len(statusIntro) {
		// A cut intro: complete it, or drop it and scan p afresh (a new
		// intro can only start at an ESC in p).
		need := statusIntro[n:]
		k := min(len(need), len(p))
		if !bytes.Equal(p[:k], need[:k]) {
			s.reset()
			return p
		}
		s.held = append(s.held, p[:k]...)
		return p[k:]
	}
	if s.held[len(s.held)-1] == 0x1b {
		// The body ended with an ESC in the last chunk: ESC \ ends the
		// sequence; ESC and anything else cancels it, and that ESC may
		// begin the next one.
		if p[0] == '\\' {
			s.complete(s.held[len(statusIntro):len(s.held)-1], emit)
			return p[1:]
		}
		s.held = append(s.held[:0], 0x1b)
		return p
	}
	for j, c := range p {
		switch {
		case c == 0x07: // BEL ends it too
			s.complete(append(s.held, p[:j]...)[len(statusIntro):], emit)
			return p[j+1:]
		case c == 0x1b:
			if j+1 == len(p) {
				s.held = append(s.held, p...)
				return nil
			}
			if p[j+1] == '\\' {
				s.complete(append(s.held, p[:j]...)[len(statusIntro):], emit)
				return p[j+2:]
			}
			s.reset()
			return p[j:]
		case c < 0x20 || c > 0x7e || len(s.held)-len(statusIntro)+j >= maxStatusBody:
			// Not a report: reports are printable ASCII, and bounded.
			s.reset()
			return p[j:]
		}
	}
	s.held = append(s.held, p...)
	return nil
}

func (s *statusScanner) complete(body []byte, emit func(state.ProgramStatus)) {
	if r, ok := parseStatus(body); ok {
		emit(r)
	}
	s.reset()
}

// parseStatus reads a report's body: key=value pairs joined by ':'. A body
// without a known state (the query "?", a later revision's state) is not a
// report; unknown keys are skipped, and an app or kind outside the
// protocol's alphabet is left out.
func parseStatus(body []byte) (state.ProgramStatus, bool) {
	var r state.ProgramStatus
	for pair := range strings.SplitSeq(string(body), ":") {
		key, value, _ := strings.Cut(pair, "=")
		switch key {
		case "state":
			r.State = value
		case "app":
			if validStatusName(value) {
				r.App = value
			}
		case "kind":
			if validStatusName(value) {
				r.Kind = value
			}
		case "msg":
			r.Message = decodeStatusMessage(value)
		}
	}
	switch r.State {
	case "working", "blocked", "done", "error", "idle", "clear":
		return r, true
	}
	return state.ProgramStatus{}, false
}

// validStatusName is the protocol's app pattern, [A-Za-z0-9_.+-]{1,32}.
func validStatusName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_.+-", c) >= 0) {
			return false
		}
	}
	return true
}

// decodeStatusMessage decodes msg (base64 of UTF-8, padded or not) into
// one line fit for a report: at most the protocol's 2048 bytes, valid
// UTF-8, every control character a space. Undecodable text is no message.
func decodeStatusMessage(v string) string {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "=")); err != nil {
			return ""
		}
	}
	// Cut before cleaning, to bound the work; and again after it, since
	// each invalid byte becomes a three-byte U+FFFD.
	msg := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(cutAtRune(string(b), maxStatusMessage), "\uFFFD"))
	return strings.TrimSpace(cutAtRune(msg, maxStatusMessage))
}

// cutAtRune cuts s to at most n bytes without leaving the first bytes of a
// character at the end: it backs off to where that character starts, as
// far as a character can be long.
func cutAtRune(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

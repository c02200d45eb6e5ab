package herdr

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/termtext"
)

// Error is Herdr's own answer that it did not do what was asked: an error
// reply with a code and a message (herdr-socket-api.md §2.3).
type Error struct {
	Code    string
	Message string
	// Method and Socket say which request to which Herdr; the client fills them.
	Method string
	Socket string
}

func (e *Error) Error() string { return e.detail() + e.advice() }

// detail is the error without its advice to run herdr-pi doctor.
func (e *Error) detail() string {
	s := fmt.Sprintf("herdr at %s refused %s: %s (%s)", e.Socket, e.Method, shownText(e.Message, maxShownMessage), shownText(e.Code, maxShownCode))
	if hint := hintFor(e.Code); hint != "" {
		s += "; " + hint
	}
	return s
}

// How much of Herdr's error message and code an error shows: a sentence
// and an identifier (herdr-socket-api.md §2.3); the reply line may be a
// MiB.
const (
	maxShownMessage = 300
	maxShownCode    = 64
	maxShownWord    = 64 // a version ("0.9.3", or a build's describe string), an agent label, a status, an id
)

// Shown is a short piece of Herdr's text — the version ping answered, a
// pane's agent, status or tab — as herdr-pi shows it (doctor's rows, the
// protocol mismatch): clipped and cleaned as Herdr's error text is.
func Shown(s string) string { return shownText(s, maxShownWord) }

// shownText is text from Herdr's reply as an error shows it: on one line
// without control characters (wrap prints the error on the terminal, where
// a newline in it would start a line that passes for herdr-pi's own), and
// at most max bytes, whole characters, with how long it was.
func shownText(s string, max int) string {
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
	}
	return termtext.Clean(s)
}

func hintFor(code string) string {
	switch code {
	case "pane_not_found":
		return "HERDR_PANE_ID names a pane this Herdr does not have (it was closed, or the shell came from another session): open a new pane"
	case "invalid_request", "not_implemented":
		return "this Herdr does not understand herdr-pi's request"
	case "invalid_agent":
		return `set [herdr] agent in herdr-pi's config.toml to a non-empty label such as "pi"`
	}
	return ""
}

// advice is what Error adds after detail: for the codes whose way out is
// herdr-pi doctor, the pointer to it.
func (e *Error) advice() string {
	switch e.Code {
	case "invalid_request", "not_implemented":
		return ": run 'herdr-pi doctor' to compare protocol versions"
	}
	return ""
}

// Detail is err as herdr-pi doctor shows it: its message with the advice
// to run doctor left out of the Herdr error in it, since doctor is what
// is running. Any context wrapped around that error stays.
func Detail(err error) string {
	msg := err.Error()
	var d interface {
		error
		detail() string
	}
	if errors.As(err, &d) {
		msg = strings.Replace(msg, d.Error(), d.detail(), 1)
	}
	return msg
}

// FailureKind names a way talking to Herdr can fail, so repeated failures of
// one kind can be logged once.
type FailureKind string

const (
	FailNoSocket   FailureKind = "no-socket"   // the socket file does not exist
	FailNotSocket  FailureKind = "not-socket"  // the path is not a socket
	FailTooLong    FailureKind = "too-long"    // the path is longer than a unix socket's may be
	FailRefused    FailureKind = "refused"     // a socket file nobody listens on
	FailPermission FailureKind = "permission"  // the socket belongs to someone else
	FailForeign    FailureKind = "foreign"     // another user's process serves the socket
	FailTimeout    FailureKind = "timeout"     // no complete reply before the deadline
	FailClosed     FailureKind = "closed"      // the connection ended without a reply line
	FailGarbage    FailureKind = "garbage"     // a reply that is not Herdr's protocol
	FailOther      FailureKind = "other"       // anything else on the socket
	FailCanceled   FailureKind = "canceled"    // the caller gave up
	failHerdrError FailureKind = "herdr-error" // prefix for Herdr's error codes
)

// TransportError means a request did not get an answer from Herdr: the socket
// is missing or dead, Herdr did not reply in time, or replied with something
// that is not its protocol.
type TransportError struct {
	Kind   FailureKind
	Socket string
	Method string
	// After is the deadline that ran out, for FailTimeout.
	After time.Duration
	Err   error
}

func (e *TransportError) Unwrap() error { return e.Err }

func (e *TransportError) Error() string { return e.detail() + e.advice() }

// advice is what Error adds after detail: for the failures whose way out
// is herdr-pi doctor, the pointer to it. Protocol versions are named only
// where a protocol change is a likely cause: a reply herdr-pi cannot
// decode. Herdr answers every request it reads, one it does not understand
// too (herdr-socket-api.md §1.3, §2.3), so a connection it closes
// unanswered or half-answered is a Herdr that went away mid-call.
func (e *TransportError) advice() string {
	switch e.Kind {
	case FailTimeout:
		return " (run 'herdr-pi doctor'; restart Herdr if it stays so)"
	case FailClosed:
		return " (run 'herdr-pi doctor' to check it)"
	case FailGarbage:
		return " (run 'herdr-pi doctor' to compare protocol versions)"
	}
	return ""
}

// detail is the error without its advice to run herdr-pi doctor.
func (e *TransportError) detail() string {
	switch e.Kind {
	case FailNoSocket:
		return fmt.Sprintf("herdr socket %s does not exist: Herdr is not running, or HERDR_SOCKET_PATH is left over from an old session (start Herdr, or open a new pane)", e.Socket)
	case FailNotSocket:
		return fmt.Sprintf("%s is not a socket: HERDR_SOCKET_PATH points at something else (fix the variable, or open a new pane)", e.Socket)
	case FailTooLong:
		return fmt.Sprintf("herdr socket path %s is %d bytes, longer than the %d a unix socket's path may have, so nothing can connect to it by that name: HERDR_SOCKET_PATH is not Herdr's socket (fix the variable, or open a new pane)", e.Socket, len(e.Socket), maxSocketPath)
	case FailRefused:
		return fmt.Sprintf("herdr socket %s refuses connections: Herdr has exited and left its socket behind (restart Herdr, or open a new pane)", e.Socket)
	case FailPermission:
		return fmt.Sprintf("herdr socket %s: permission denied (run herdr-pi as the user who runs Herdr)", e.Socket)
	case FailForeign:
		return fmt.Sprintf("herdr socket %s: %v; herdr-pi sends it nothing (HERDR_SOCKET_PATH must name your own Herdr's socket: open a new pane, or unset it outside Herdr)", e.Socket, e.Err)
	case FailTimeout:
		return fmt.Sprintf("herdr socket %s: no reply to %s within %v: Herdr is busy or hung", e.Socket, e.Method, e.After)
	case FailClosed:
		return fmt.Sprintf("herdr socket %s: Herdr closed the connection without answering %s: it may be restarting, or have crashed", e.Socket, e.Method)
	case FailGarbage:
		return fmt.Sprintf("herdr socket %s: the reply to %s is not Herdr's protocol (%v): is HERDR_SOCKET_PATH another program's socket?", e.Socket, e.Method, e.Err)
	case FailCanceled:
		return fmt.Sprintf("herdr socket %s: %s abandoned: %v", e.Socket, e.Method, e.Err)
	}
	return fmt.Sprintf("herdr socket %s: %s failed: %v", e.Socket, e.Method, e.Err)
}

// ProtocolMismatchError means Herdr answered ping with a protocol other than
// [Protocol]. Herdr itself never refuses a client for it (§2.4), so callers
// decide whether to go on.
type ProtocolMismatchError struct {
	Socket   string
	Got      int
	Version  string
	Expected int
}

func (e *ProtocolMismatchError) Error() string {
	dir := "newer"
	fix := "upgrade herdr-pi if something misbehaves"
	if e.Got < e.Expected {
		dir, fix = "older", "upgrade Herdr"
	}
	return fmt.Sprintf("herdr at %s speaks protocol %d (Herdr %s), %s than the protocol %d herdr-pi was built for: the methods herdr-pi uses may differ (%s)",
		e.Socket, e.Got, Shown(e.Version), dir, e.Expected, fix)
}

// KindOf classifies err for log de-duplication: a transport failure kind,
// "herdr-error:<code>" for an error reply, or "" for nil.
func KindOf(err error) FailureKind {
	var te *TransportError
	var he *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &te):
		return te.Kind
	case errors.As(err, &he):
		return failHerdrError + ":" + FailureKind(he.Code)
	}
	return FailOther
}

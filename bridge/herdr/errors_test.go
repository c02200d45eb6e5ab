package herdr_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// The errors whose way out is herdr-pi doctor say so to every command;
// Detail, what doctor shows, is the same message without that advice, and
// keeps whatever context was wrapped around the error.
func TestDetailLeavesOutTheAdviceToRunDoctor(t *testing.T) {
	const doctor = "herdr-pi doctor"
	for _, err := range []error{
		&herdr.TransportError{Kind: herdr.FailTimeout, Socket: "/s", Method: "ping", After: 1500 * time.Millisecond},
		&herdr.TransportError{Kind: herdr.FailClosed, Socket: "/s", Method: "ping"},
		&herdr.TransportError{Kind: herdr.FailGarbage, Socket: "/s", Method: "ping", Err: errors.New("<html>")},
		&herdr.Error{Code: "invalid_request", Message: "no such method", Socket: "/s", Method: "pane.get"},
		fmt.Errorf("reading pane w1:p1: %w", &herdr.TransportError{Kind: herdr.FailTimeout, Socket: "/s", Method: "pane.get", After: time.Second}),
	} {
		full, detail := err.Error(), herdr.Detail(err)
		if !strings.Contains(full, doctor) {
			t.Errorf("%q: the advice to run doctor is gone from the error", full)
		}
		if strings.Contains(detail, doctor) || !strings.HasPrefix(full, detail) || len(detail) < 20 {
			t.Errorf("Detail(%q) = %q; want its start, without the advice", full, detail)
		}
	}
	// An error without that advice is shown whole.
	for _, err := range []error{
		&herdr.TransportError{Kind: herdr.FailNoSocket, Socket: "/s"},
		&herdr.Error{Code: "pane_not_found", Message: "no pane", Socket: "/s", Method: "pane.get"},
		errors.New("plain"),
	} {
		if got := herdr.Detail(err); got != err.Error() {
			t.Errorf("Detail(%q) = %q, want it whole", err, got)
		}
	}
}

// Herdr's error message is text from elsewhere that wrap prints on the
// terminal ("Herdr showed none of this run's states: …") and doctor puts in
// a row: it is shown on one line, without control characters, and bounded.
// A 200 KB message was printed whole, and a newline in it started a line of
// its own that could pass for herdr-pi's ("herdr-pi: all is well").
func TestAHerdrErrorMessageIsShownOnOneBoundedCleanLine(t *testing.T) {
	s := herdrtest.Start(t)
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"ping"},
		Reply: map[string]any{"error": map[string]any{"code": "internal_error", "message": "bad \x1b]0;title\x07thing\r\nherdr-pi: all is well " + strings.Repeat("M", 200_000)}}})
	_, err := herdr.NewClient(s.SocketPath()).Ping(t.Context())
	var he *herdr.Error
	if !errors.As(err, &he) {
		t.Fatalf("Ping: %v, want Herdr's error", err)
	}
	for _, shown := range []string{err.Error(), herdr.Detail(err)} {
		if !strings.Contains(shown, "refused ping: bad  ]0;title thing  herdr-pi: all is well MMM") || !strings.Contains(shown, "(internal_error)") {
			t.Errorf("the message is not shown, cleaned, with its code: %.300q", shown)
		}
		if strings.ContainsAny(shown, "\x1b\x07\r\n") || len(shown) > 1000 {
			t.Errorf("shown as %d bytes, with control characters or on several lines: %.300q", len(shown), shown)
		}
	}
}

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

// A connection Herdr drops before it answers — it crashed or is
// restarting mid-call, or died half-way through its reply — is said to be
// that, with doctor to check Herdr: nothing in it suggests the protocols
// differ, and the advice to compare protocol versions misled a person whose
// Herdr had only restarted. That advice stays for what a protocol change
// would bring: a reply herdr-pi cannot decode, or Herdr refusing a request
// it does not understand.
func TestADroppedConnectionIsNotCalledAProtocolMismatch(t *testing.T) {
	s := herdrtest.Start(t)
	sendInput := func() error {
		return herdr.NewClient(s.SocketPath()).PaneSendInput(t.Context(), s.PaneID(), "pi\n")
	}
	dropped := map[string]func() error{
		"closed unanswered": func() error {
			s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultClose, Count: 1})
			return sendInput()
		},
		"closed mid-line": func() error {
			s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultCloseMidLine, Count: 1})
			return sendInput()
		},
		"crashed mid-call": func() error {
			s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang, Count: 1})
			before := len(s.Requests())
			errc := make(chan error, 1)
			go func() { errc <- sendInput() }()
			s.WaitFor(t, 10*time.Second, "the call", func() bool { return len(s.Requests()) > before })
			s.Crash()
			defer func() {
				if err := s.Restart(); err != nil {
					t.Fatal(err)
				}
			}()
			return <-errc
		},
	}
	for name, call := range dropped {
		err := call()
		s.SetFault(herdrtest.Fault{})
		if herdr.KindOf(err) != herdr.FailClosed {
			t.Fatalf("%s: %v, want the connection closed", name, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "protocol") || !strings.Contains(msg, "restarting") || !strings.Contains(msg, "'herdr-pi doctor'") {
			t.Errorf("%s: %q; want it to say Herdr may be restarting, and doctor, and nothing of protocols", name, msg)
		}
	}

	mismatched := map[string]herdrtest.Fault{
		"garbage":         {Kind: herdrtest.FaultGarbage, Count: 1},
		"unknown method":  {Kind: herdrtest.FaultReply, Count: 1, Reply: map[string]any{"error": map[string]any{"code": "invalid_request", "message": "invalid request: unknown variant `pane.send_input`"}}},
		"not implemented": {Kind: herdrtest.FaultReply, Count: 1, Reply: map[string]any{"error": map[string]any{"code": "not_implemented", "message": "no handler"}}},
		"another result":  {Kind: herdrtest.FaultReply, Count: 1, Reply: map[string]any{"result": map[string]any{"type": "input_sent"}}},
	}
	for name, f := range mismatched {
		s.SetFault(f)
		err := sendInput()
		s.SetFault(herdrtest.Fault{})
		if err == nil || !strings.Contains(err.Error(), "run 'herdr-pi doctor' to compare protocol versions") {
			t.Errorf("%s: %v; want the advice to compare protocol versions", name, err)
		}
	}
}

package herdr_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
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

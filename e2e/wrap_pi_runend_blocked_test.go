package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
)

// Through `herdr-pi wrap` with a real Pi and its probe: a script's wait
// (`herdr-pi waiting start`) keeps the pane blocked while Pi runs. A run
// the model refuses is told as failed all the same, and one that finishes
// as finished: the pane waits on the script, not on Pi, and the person
// must hear how Pi's run ended.
func TestWrapPiRunEndsAreToldUnderAScriptsWait(t *testing.T) {
	const refusal = "the model refuses this request"
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		if strings.Contains(req.LastUser(), "REFUSE") {
			return fakellm.Reply{Status: 400, Text: refusal}
		}
		return fakellm.Reply{Text: "All done here."}
	}, true)
	r.extra = append(r.extra, everyRun(t))
	tm := r.wrap()
	r.waitStates("the probe connected", "unknown", "idle")
	if out, err := r.herdrPi("waiting", "start", "--source", "deploy", "--id", "42", "--label", "approve the deploy"); err != nil {
		t.Fatalf("waiting start: %v\n%s", err, out)
	}
	if n := awaitToasts(t, r.herdr, "the wait's toast", 1); n[0].Title != "Pi needs your input" {
		t.Fatalf("notifications %+v, want the wait's", n)
	}
	tm.Type(t, "REFUSE please")
	n := awaitToasts(t, r.herdr, "the refused run's toast", 2)
	if n[1].Title != "Pi stopped with an error" || !strings.Contains(n[1].Body, refusal) {
		t.Fatalf("notifications %+v, want the refusal told", n)
	}
	tm.Type(t, "hello")
	if n := awaitToasts(t, r.herdr, "the finished run's toast", 3); n[2].Title != "Pi finished" {
		t.Fatalf("notifications %+v, want \"Pi finished\"", n)
	}
	time.Sleep(500 * time.Millisecond)
	if n := r.herdr.Notifications(); len(n) != 3 {
		t.Fatalf("notifications %+v, want three", n)
	}
	r.waitStates("blocked throughout", "unknown", "idle", "blocked(approve the deploy)")
	quit(t, tm)
}

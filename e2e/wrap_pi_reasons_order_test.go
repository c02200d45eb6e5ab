package e2e

import (
	"testing"
	"time"
)

// Through `herdr-pi wrap` with a real Pi: Pi's reply asks, then a script's
// wait opens, then /reload restores the question. `herdr-pi status` lists
// the open reasons by age — the question first, as it was asked first —
// and names the question as the one the report carries; once answered,
// the report moves to the wait.
func TestWrapPiStatusListsReasonsByAgeAfterAReload(t *testing.T) {
	r := newPiRig(t, answerOr(), true)
	tm := r.wrap()
	r.waitStates("the probe connected", "unknown", "idle")
	tm.Type(t, "hello")
	r.waitStates("the question", "unknown", "idle", "working", "blocked(input needed)")
	if out, err := r.herdrPi("waiting", "start", "--source", "deploy", "--id", "42", "--label", "approve the deploy"); err != nil {
		t.Fatalf("waiting start: %v\n%s", err, out)
	}
	r.waitReasons("the question and the wait", "sentinel:sentinel", "wait:hook:deploy:42")
	starts := r.sessionStarts()
	tm.Type(t, "/reload")
	for deadline := time.Now().Add(time.Minute); r.sessionStarts() == starts; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the reload never started a session")
		}
	}
	r.waitReasons("after the reload", "sentinel:sentinel", "wait:hook:deploy:42")
	tm.Type(t, "ANSWER: main.go")
	r.waitStates("the answer", "unknown", "idle", "working", "blocked(input needed)", "blocked(approve the deploy)")
	quit(t, tm)
}

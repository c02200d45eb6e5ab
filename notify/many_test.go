package notify

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/notify/board"
)

// Forty wrappers, one Herdr: every pane turns blocked at the same moment.
// Herdr shows one toast a second, so each wrapper alone would be answered
// rate_limited until its retries ran out; the person must still be told of
// every pane that asks, and soon.
func TestManyPanesBlockingAtOnceAreAllTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const panes = 40
		h := &pacedHerdr{}
		dir := t.TempDir()
		var ns []*Notifier
		for i := range panes {
			b, err := board.Open(dir, "/run/herdr.sock", fmt.Sprintf("w1:p%d", i))
			if err != nil {
				t.Fatal(err)
			}
			ns = append(ns, Start(Options{Herdr: h, Board: b, Project: "api", Label: fmt.Sprintf("agent%02d", i), Instance: fmt.Sprintf("w1:p%d", i)}))
		}
		for _, n := range ns {
			n.Notify(Event{Kind: InputNeeded, Key: "blocked#1"})
		}
		time.Sleep(15 * time.Second)
		calls, results := h.snapshot()
		for _, n := range ns {
			n.Close(context.Background())
		}
		var shown []string
		for i, r := range results {
			if r.Shown {
				shown = append(shown, calls[i].Body)
			}
		}
		var missed []string
		for i := range panes {
			name := fmt.Sprintf("agent%02d", i)
			told := false
			for _, b := range shown {
				if strings.Contains(b, name) {
					told = true
				}
			}
			if !told {
				missed = append(missed, name)
			}
		}
		if len(missed) > 0 {
			t.Fatalf("%d of %d panes never named in a toast Herdr showed within 15 s (%d shown): %v\nshown: %q", len(missed), panes, len(shown), missed, shown)
		}
	})
}

package notify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/notify/board"
	"github.com/herdr-pi/herdr-pi/pane/state"
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
			b := presentBoard(t, dir, fmt.Sprintf("w1:p%d", i), "api")
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
		shown := shownToasts(calls, results, false)
		if missed := unnamed(shown, panes); len(missed) > 0 {
			t.Fatalf("%d of %d panes never named in a toast Herdr showed within 15 s (%d shown): %v\nshown: %q", len(missed), panes, len(shown), missed, shown)
		}
	})
}

// Two unlabelled Pis in one project: each toast would read "Pi needs your
// input · api", and the person could not tell which pane asks. While
// another wrapper of the Herdr has the same name, a toast says where its
// pane is; a pane whose name is its own says nothing more.
func TestNamesakePanesSayWhereTheyAre(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &pacedHerdr{}
		dir := t.TempDir()
		start := func(pane, project, where string) *Notifier {
			b, err := board.Open(dir, "/run/herdr.sock", pane)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Present(PaneName("", project)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.Close)
			return Start(Options{Herdr: h, Board: b, Roster: b, Project: project, Instance: pane,
				Where: func(context.Context) string { return where }})
		}
		a := start("w1:p1", "api", "tab 1")
		b := start("w1:p2", "api", "tab 2")
		c := start("w1:p3", "web", "tab 3")
		for _, n := range []*Notifier{a, b, c} {
			n.Notify(Event{Kind: InputNeeded, Key: "blocked#1"})
			time.Sleep(2 * time.Second)
		}
		for _, n := range []*Notifier{a, b, c} {
			n.Close(context.Background())
		}
		calls, _ := h.snapshot()
		var bodies []string
		for _, c := range calls {
			bodies = append(bodies, c.Body)
		}
		want := []string{"api · tab 1", "api · tab 2", "web"}
		if !slices.Equal(bodies, want) {
			t.Fatalf("toasts %q, want %q", bodies, want)
		}
	})
}

// A question answered while Herdr held its toast back (another pane's
// toast had the second) is over for the other panes: no other pane's toast
// names it. Its own toast still comes, a second late: the last blocked
// spell is always told (TestWrapNotifiesThroughHerdr, issue 6), and a
// dialog escaped before its toast went is still said
// (TestWrapPiStatusChannelWithoutProbe).
func TestAQuestionAnsweredBeforeItsToastIsNotNamedByOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &pacedHerdr{before: func(call int) string {
			if call == 1 {
				return ReasonRateLimited
			}
			return ""
		}}
		dir := t.TempDir()
		b := presentBoard(t, dir, "w1:p1", "api")
		n := Start(Options{Herdr: h, Board: b, Project: "api", Instance: "w1:p1"})
		tr := NewTriggers(n, 0)
		tr.StateEvent(state.Event{Kind: state.EventTransition, From: state.Idle, To: state.Blocked,
			Reason: &state.Reason{Kind: state.KindSentinel, Key: "sentinel", Question: "Which database?"}})
		time.Sleep(300 * time.Millisecond) // Herdr answered rate_limited
		tr.StateEvent(state.Event{Kind: state.EventTransition, From: state.Blocked, To: state.Working})
		other, _ := board.Open(dir, "/run/herdr.sock", "w1:p2")
		if held := other.Others(); len(held) != 0 {
			t.Errorf("the answered question is still on the board: %+v", held)
		}
		time.Sleep(5 * time.Second)
		if held := other.Others(); len(held) != 0 {
			t.Errorf("the answered question went back on the board: %+v", held)
		}
		n.Close(context.Background())
		calls, results := h.snapshot()
		if len(calls) != 2 || !results[1].Shown || calls[1].Body != "Which database? · api" {
			t.Errorf("toasts %+v (%+v), want the question's own toast shown once Herdr let it", calls, results)
		}
	})
}

// presentBoard is the board of a running wrapper of pane, known by place,
// as wrap opens it: present until the test ends.
func presentBoard(t *testing.T, dir, pane, place string) *board.Board {
	t.Helper()
	b, err := board.Open(dir, "/run/herdr.sock", pane)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Present(place); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// A question Herdr holds back for longer than the half minute a toast is
// offered ("busy": a toast stayed on screen), while no other pane toasts
// to name it: it is not given up while it is open and on the board, but
// offered again, more slowly, until Herdr shows it.
func TestAQuestionHeldBackPastTheRetriesIsStillToasted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		h := &pacedHerdr{before: func(int) string {
			if time.Since(start) < herdrRetryFor+15*time.Second {
				return ReasonBusy
			}
			return ""
		}}
		dir := t.TempDir()
		b := presentBoard(t, dir, "w1:p1", "api")
		n := Start(Options{Herdr: h, Board: b, Project: "api", Instance: "w1:p1"})
		defer n.Close(context.Background())
		n.Notify(Event{Kind: InputNeeded, Key: "blocked#1"})
		time.Sleep(herdrRetryFor + 30*time.Second)
		calls, results := h.snapshot()
		if last := len(results) - 1; last < 0 || !results[last].Shown || calls[last].Body != "api" {
			t.Fatalf("the question was never shown (%d calls, last %+v)", len(results), results[max(last, 0):])
		}
		// Once shown it is off the board and offered no more.
		time.Sleep(10 * time.Second)
		n.Close(context.Background())
		if again, _ := h.snapshot(); len(again) != len(calls) {
			t.Fatalf("%d calls after it was shown", len(again)-len(calls))
		}

		// A wrapper that ends while Herdr still holds its question back
		// does not wait to offer it again.
		busy := &pacedHerdr{before: func(int) string { return ReasonBusy }}
		n = Start(Options{Herdr: busy, Board: b, Project: "api", Instance: "w1:p1"})
		n.Notify(Event{Kind: InputNeeded, Key: "blocked#1"})
		time.Sleep(herdrRetryFor + time.Minute)
		closing := time.Now()
		n.Close(context.Background())
		if d := time.Since(closing); d >= herdrRetryLate {
			t.Fatalf("closing waited %v for a question kept on offer", d)
		}
		if held := presentBoard(t, dir, "w1:p2", "web").Others(); len(held) != 0 {
			t.Fatalf("a closed wrapper's question is still on the board: %+v", held)
		}
	})
}

// Two panes of one name (two unlabelled Pis in one project), the first's
// toast held back and named by the second's: the name says which pane it
// is, as its own toast would have. "api · tab 2 · also asking: api" read
// as the same pane twice, and the person went to tab 2 only.
func TestANamesakeNamedByAnotherToastSaysWhereItIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &pacedHerdr{before: func(call int) string {
			if call == 1 {
				return ReasonRateLimited
			}
			return ""
		}}
		dir := t.TempDir()
		start := func(pane, where string) *Notifier {
			b := presentBoard(t, dir, pane, "api")
			n := Start(Options{Herdr: h, Board: b, Roster: b, Project: "api", Instance: pane,
				Where: func(context.Context) string { return where }})
			t.Cleanup(func() { n.Close(context.Background()) })
			return n
		}
		a := start("w1:p1", "tab 1")
		b := start("w1:p2", "tab 2")
		a.Notify(Event{Kind: InputNeeded, Key: "blocked#1"})
		time.Sleep(100 * time.Millisecond) // Herdr held a's toast back
		b.Notify(Event{Kind: InputNeeded, Key: "blocked#1"})
		time.Sleep(5 * time.Second)
		calls, results := h.snapshot()
		var shown []string
		for i, r := range results {
			if r.Shown {
				shown = append(shown, calls[i].Body)
			}
		}
		want := []string{"api · tab 2 · also asking: api (tab 1)"}
		if !slices.Equal(shown, want) {
			t.Fatalf("shown %q, want %q", shown, want)
		}
	})
}

// Forty wrappers, one Herdr: every pane's run ends at the same moment,
// thirty of them finished and ten with an error. Herdr shows one toast a
// second; each pane's toast alone would be offered for half a minute and
// then given up. The person must still hear of every pane, and of each
// failed one what it said.
func TestManyPanesFinishingAtOnceAreAllTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const panes = 40
		h := &pacedHerdr{}
		dir := t.TempDir()
		var ns []*Notifier
		for i := range panes {
			b := presentBoard(t, dir, fmt.Sprintf("w1:p%d", i), fmt.Sprintf("agent%02d", i))
			ns = append(ns, Start(Options{Herdr: h, Board: b, Project: "api", Label: fmt.Sprintf("agent%02d", i), Instance: fmt.Sprintf("w1:p%d", i)}))
		}
		for i, n := range ns {
			if i%4 == 3 {
				n.Notify(Event{Kind: Failed, Key: "run#1", Error: "429 Too Many Requests"})
			} else {
				n.Notify(Event{Kind: Finished, Key: "run#1"})
			}
		}
		time.Sleep(2 * time.Minute)
		calls, results := h.snapshot()
		for _, n := range ns {
			n.Close(context.Background())
		}
		shown := shownToasts(calls, results, true)
		if missed := unnamed(shown, panes); len(missed) > 0 {
			t.Fatalf("%d of %d panes never named in a toast Herdr showed (%d shown): %v\nshown: %q", len(missed), panes, len(shown), missed, shown)
		}
		t.Logf("%d toasts shown: %q", len(shown), shown)
	})
}

// A run's end that Herdr held back is named by the next toast another pane
// gets shown, after that pane's own words, and its own toast is not sent
// any more: the person was told.
func TestAFinishedPaneNamedInAnotherToastSendsNoneOfItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, a, b := alphaHeldBackThenBeta(t)
		a.Notify(Event{Kind: Finished, Key: "run#1"})
		time.Sleep(100 * time.Millisecond) // Herdr held a's toast back
		b.Notify(Event{Kind: InputNeeded, Key: "blocked#1", Question: "Which database?"})
		time.Sleep(10 * time.Second)
		a.Close(context.Background())
		b.Close(context.Background())
		calls, results := h.snapshot()
		var got []string
		for i, c := range calls {
			got = append(got, fmt.Sprintf("%s: %s (%s)", c.Title, c.Body, results[i].Reason))
		}
		want := []string{
			"Pi finished: alpha · api (rate_limited)",
			"Pi needs your input: Which database? · beta · api · also finished: alpha (shown)",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("toasts\n%q\nwant\n%q", got, want)
		}
		if st := a.Status(); st[0].Last != OutcomeToldWithOthers {
			t.Fatalf("the finished pane's channel says %+v, want %q", st[0], OutcomeToldWithOthers)
		}
	})
}

// A run's end is news for as long as its toast is offered: when Herdr
// holds it back past that (a toast stayed on screen), it is given up as
// before, and off the board, so no later toast names a run long over. A
// question is kept on offer; a run's end is not.
func TestARunsEndGivenUpLeavesTheBoard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &pacedHerdr{before: func(int) string { return ReasonBusy }}
		dir := t.TempDir()
		a := Start(Options{Herdr: h, Board: presentBoard(t, dir, "w1:p1", "alpha"), Project: "api", Label: "alpha", Instance: "w1:p1"})
		defer a.Close(context.Background())
		other := presentBoard(t, dir, "w1:p2", "beta")
		a.Notify(Event{Kind: Failed, Key: "run#1"})
		time.Sleep(2 * time.Second)
		if held := other.Others(); len(held) != 1 || held[0].Kind != board.Failed || held[0].Place != "alpha" {
			t.Fatalf("the board holds %+v, want alpha's failed run", held)
		}
		time.Sleep(herdrRetryFor)
		if held := other.Others(); len(held) != 0 {
			t.Fatalf("a run's end given up is still on the board: %+v", held)
		}
		calls, _ := h.snapshot()
		time.Sleep(time.Minute)
		if again, _ := h.snapshot(); len(again) != len(calls) {
			t.Fatalf("%d calls after the toast was given up", len(again)-len(calls))
		}
	})
}

// shownToasts are the bodies of the toasts Herdr showed, each after its
// title when withTitle.
func shownToasts(calls []HerdrToast, results []HerdrResult, withTitle bool) []string {
	var shown []string
	for i, r := range results {
		if r.Shown {
			s := calls[i].Body
			if withTitle {
				s = calls[i].Title + ": " + s
			}
			shown = append(shown, s)
		}
	}
	return shown
}

// unnamed lists the panes agent00 to agent<n-1> no shown toast names.
func unnamed(shown []string, n int) []string {
	var missed []string
	for i := range n {
		name := fmt.Sprintf("agent%02d", i)
		if !slices.ContainsFunc(shown, func(b string) bool { return strings.Contains(b, name) }) {
			missed = append(missed, name)
		}
	}
	return missed
}

// A question is told by a toast of its own kind: a run's end Herdr shows
// names the runs that ended with it, never a pane that asks. Under a
// "finished" title, with the sound of one, a question named in passing is
// easy to wave away, and the pane then sends no toast of its own; held
// back, it gets its own toast as soon as Herdr takes one.
func TestAQuestionIsNotToldInAFinishedToast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, a, b := alphaHeldBackThenBeta(t)
		a.Notify(Event{Kind: InputNeeded, Key: "blocked#1", Question: "Which database?"})
		time.Sleep(100 * time.Millisecond) // Herdr held a's toast back
		b.Notify(Event{Kind: Finished, Key: "run#1"})
		time.Sleep(10 * time.Second)
		a.Close(context.Background())
		b.Close(context.Background())
		calls, results := h.snapshot()
		shown := shownToasts(calls, results, true)
		for _, s := range shown {
			if strings.HasPrefix(s, "Pi finished") && strings.Contains(s, "alpha") {
				t.Fatalf("a finished toast told the question: %q (all shown: %q)", s, shown)
			}
		}
		if !slices.Contains(shown, "Pi needs your input: Which database? · alpha · api") {
			t.Fatalf("the question never got its own toast; shown: %q", shown)
		}
	})
}

// alphaHeldBackThenBeta starts the wrappers of two panes of project api on
// one board, alpha and beta, against a Herdr that holds the first toast
// back (rate_limited) and then keeps its one-a-second pace.
func alphaHeldBackThenBeta(t *testing.T) (h *pacedHerdr, a, b *Notifier) {
	h = &pacedHerdr{before: func(call int) string {
		if call == 1 {
			return ReasonRateLimited
		}
		return ""
	}}
	dir := t.TempDir()
	a = Start(Options{Herdr: h, Board: presentBoard(t, dir, "w1:p1", "alpha"), Project: "api", Label: "alpha", Instance: "w1:p1"})
	b = Start(Options{Herdr: h, Board: presentBoard(t, dir, "w1:p2", "beta"), Project: "api", Label: "beta", Instance: "w1:p2"})
	return h, a, b
}

package e2e

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// fakeKey holds a script's fake Herdr in testscript's Values.
type fakeKey struct{}

type fakeHolder struct{ s *herdrtest.Server }

// setupHerdrFake gives each script a slot for a fake Herdr and stops it at
// the end, failing the script when herdr-pi sent a request that breaks
// Herdr's schema.
func setupHerdrFake(env *testscript.Env) {
	h := &fakeHolder{}
	env.Values[fakeKey{}] = h
	t := env.T()
	env.Defer(func() {
		if h.s == nil {
			return
		}
		h.s.Close()
		if v := h.s.FatalViolations(); len(v) > 0 {
			t.Fatal("herdrfake: " + strings.Join(v, "\nherdrfake: "))
		}
	})
}

func fakeOf(ts *testscript.TestScript) *fakeHolder {
	return ts.Value(fakeKey{}).(*fakeHolder)
}

// cmdHerdrFake drives a fake Herdr from a script:
//
//	herdrfake start [-protocol N] [-delivery D] [-fault K] [-delay D]
//	    start one and export HERDR_ENV, HERDR_SOCKET_PATH, HERDR_PANE_ID,
//	    HERDR_TAB_ID and HERDR_WORKSPACE_ID for what runs next
//	herdrfake fault KIND [DELAY]   misbehave: slow, hang, close, garbage,
//	                               close-mid-line, or none
//	herdrfake crash | restart      stop answering (the socket file stays) | come back
//	herdrfake protocol N           answer ping with protocol N
//	herdrfake clear                forget what was recorded; Herdr's state (and
//	                               its seq memory) stays
//	herdrfake calls                print the pane's agent calls, one a line:
//	                               "report unknown", "release"
//	herdrfake requests             print every request's method, one a line
//	herdrfake notifications        print every notification.show and its answer
//	herdrfake delivery D           set Herdr's [ui.toast] delivery
//	herdrfake wait METHOD [N] [TIMEOUT]  until N (default 1) METHOD requests arrived
//	herdrfake released             the pane's last agent call is a release with
//	                               a seq above every report, every seq was
//	                               accepted, and the pane shows no agent
func cmdHerdrFake(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: herdrfake start|fault|crash|restart|calls|requests|wait|released")
	}
	h := fakeOf(ts)
	if args[0] != "start" && h.s == nil {
		ts.Fatalf("herdrfake %s: no fake started (run 'herdrfake start' first)", args[0])
	}
	if neg && args[0] != "released" {
		ts.Fatalf("herdrfake %s does not support negation", args[0])
	}
	switch args[0] {
	case "start":
		fs := flag.NewFlagSet("herdrfake start", flag.ContinueOnError)
		protocol := fs.Int("protocol", 20, "protocol ping reports")
		delivery := fs.String("delivery", "off", "toast delivery")
		fault := fs.String("fault", "", "fault kind from the start")
		delay := fs.Duration("delay", 0, "delay for the slow fault")
		ts.Check(fs.Parse(args[1:]))
		if h.s != nil {
			ts.Fatalf("herdrfake start: already started")
		}
		s, err := herdrtest.New(herdrtest.Options{Protocol: *protocol, Delivery: *delivery, Logf: ts.Logf})
		ts.Check(err)
		h.s = s
		if ok, path := s.SchemaChecked(); ok {
			ts.Logf("herdrfake: requests are checked against %s", path)
		} else {
			ts.Logf("herdrfake: no Herdr schema found; requests are not schema-checked")
		}
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultKind(*fault), Delay: *delay})
		for _, kv := range s.Env() {
			k, v, _ := strings.Cut(kv, "=")
			ts.Setenv(k, v)
		}
	case "fault":
		f := herdrtest.Fault{}
		if len(args) > 1 && args[1] != "none" {
			f.Kind = herdrtest.FaultKind(args[1])
		}
		if len(args) > 2 {
			d, err := time.ParseDuration(args[2])
			ts.Check(err)
			f.Delay = d
		}
		h.s.SetFault(f)
	case "crash":
		h.s.Crash()
	case "clear":
		h.s.ClearRecords()
	case "delivery":
		if len(args) != 2 {
			ts.Fatalf("usage: herdrfake delivery off|herdr|terminal|system")
		}
		h.s.SetDelivery(args[1])
	case "protocol":
		if len(args) != 2 {
			ts.Fatalf("usage: herdrfake protocol N")
		}
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		h.s.SetProtocol(n)
	case "restart":
		ts.Check(h.s.Restart())
	case "calls":
		out := ts.Stdout() // empty output must replace the last command's
		for _, c := range h.s.AgentCalls(h.s.PaneID()) {
			line := strings.TrimPrefix(c.Method, "pane.")
			line = strings.TrimSuffix(line, "_agent")
			if c.State != "" {
				line += " " + c.State
			}
			fmt.Fprintln(out, line)
		}
	case "notifications":
		out := ts.Stdout()
		for _, n := range h.s.Notifications() {
			fmt.Fprintf(out, "title=%q body=%q sound=%q shown=%v reason=%s\n", n.Title, n.Body, n.Sound, n.Shown, n.Reason)
		}
	case "requests":
		out := ts.Stdout()
		for _, m := range h.s.Methods() {
			fmt.Fprintln(out, m)
		}
	case "wait":
		if len(args) < 2 {
			ts.Fatalf("usage: herdrfake wait METHOD [N] [TIMEOUT]")
		}
		n, timeout := 1, 10*time.Second
		if len(args) > 2 {
			v, err := strconv.Atoi(args[2])
			ts.Check(err)
			n = v
		}
		if len(args) > 3 {
			d, err := time.ParseDuration(args[3])
			ts.Check(err)
			timeout = d
		}
		count := func() int {
			k := 0
			for _, m := range h.s.Methods() {
				if m == args[1] {
					k++
				}
			}
			return k
		}
		if !h.s.Await(timeout, func() bool { return count() >= n }) {
			ts.Fatalf("herdrfake wait: %d %s requests after %v, want %d; requests: %s", count(), args[1], timeout, n, strings.Join(h.s.Methods(), " "))
		}
	case "released":
		err := checkReleased(h.s)
		switch {
		case err != nil && !neg:
			ts.Fatalf("herdrfake released: %v", err)
		case err == nil && neg:
			ts.Fatalf("herdrfake released: the pane was released")
		}
	default:
		ts.Fatalf("herdrfake: unknown subcommand %q", args[0])
	}
}

// checkReleased says why the pane was not properly given back, or nil.
func checkReleased(s *herdrtest.Server) error {
	calls := s.AgentCalls(s.PaneID())
	if len(calls) == 0 {
		return fmt.Errorf("no agent calls at all")
	}
	var maxReport, maxSeq uint64
	for i, c := range calls {
		// The identical request again, after a reply was lost (a slow
		// machine can let the 500 ms first attempt time out), is ignored
		// by Herdr and fine. So is a request read only after the wrapper
		// had given up on it and sent a newer one: ignoring it is what the
		// seq is for.
		retry := i > 0 && c.Seq == calls[i-1].Seq && c.Method == calls[i-1].Method && c.State == calls[i-1].State
		if !c.Accepted && !retry && !abandoned(s, c) {
			return fmt.Errorf("call %d (%s seq %d) was ignored by Herdr's seq rules (highest before: %d)", i, c.Method, c.Seq, maxSeq)
		}
		maxSeq = max(maxSeq, c.Seq)
		if c.Method == "pane.report_agent" {
			maxReport = max(maxReport, c.Seq)
		}
	}
	last := calls[len(calls)-1]
	switch {
	case last.Method != "pane.release_agent":
		return fmt.Errorf("the last call is %s %s, not a release", last.Method, last.State)
	case last.Seq <= maxReport:
		return fmt.Errorf("release seq %d is not above the last report's %d", last.Seq, maxReport)
	}
	// Applied or not (a run that exits before its first report left finds
	// nothing to clear), the pane must end up clear.
	if st := s.Pane(s.PaneID()); st.Status != "unknown" || st.Agent != "" {
		return fmt.Errorf("the pane still shows %+v", st)
	}
	return nil
}

// abandoned says whether the client had hung up on c's request before the
// fake could answer it. The fake marks that once its answer fails, just
// after it recorded the call, so a call not (yet) marked is given a moment.
func abandoned(s *herdrtest.Server, c herdrtest.AgentCall) bool {
	return s.Await(5*time.Second, func() bool {
		for _, r := range s.Requests() {
			if r.N == c.Request {
				return r.Lost
			}
		}
		return false
	})
}

package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/procstat"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// piDialog draws what Pi draws for a question in place of its editor: the
// screen the pi manifest's "dialog" rule reads as blocked, whichever
// wrapper reads it.
const piDialog = `print \e[2J\e[H Pick one\r\n\r\n ↑↓ navigate  enter select  esc cancel\r\n\r\n────────────────────\r\n`

// A wrapper started inside another's agent in the same pane (herdr-pi wrap
// bash, then herdr-pi wrap pi in that shell) asks the person once: the
// outer wrapper sees the inner agent's question on its own screen too, but
// while the inner one holds the pane the outer one sends no notification
// of its own. One question, one toast. Once the inner one has ended, the
// outer one's own questions are toasted again.
func TestANestedWrappersQuestionIsToastedOnce(t *testing.T) {
	m := newMultiHerdr(t, 1)
	p := m.panes[0]
	inner := agentScript(t, `print inner-ready\r\n`, "readline", piDialog, "readline", "pi-idle", `print inner-after\r\n`, "readline")
	outer1 := agentScript(t, `print outer-ready\r\n`, "readline")
	outer2 := agentScript(t, `print outer-back\r\n`, "readline", piDialog, "readline")
	shell := fmt.Sprintf("fakeagent %s; herdr-pi wrap --label inner -- fakeagent %s; fakeagent %s", outer1, inner, outer2)
	sh := "cd " + m.project("api") + " && exec herdr-pi wrap --label outer -- sh -c '" + shell + "'"
	r, saved := startOuterThenInner(t, m, p, sh)
	m.h.WaitFor(t, 30*time.Second, "the inner wrapper registered", func() bool { return m.status(p).WrapperPID != r.pid() })

	// The inner agent asks; both wrappers read the question on their screen.
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	m.waitPane(p, "blocked")
	m.h.WaitFor(t, 30*time.Second, "the outer wrapper reading the question too", func() bool {
		return strings.Contains(saved.status(t, m), "state    blocked")
	})
	m.h.WaitFor(t, 30*time.Second, "the inner agent's toast", func() bool { return len(m.shown()) >= 1 })

	// Answered: the inner agent idles and ends, the pane is the outer's,
	// whose agent asks in turn.
	innerShown, _, outerN := answerInnerThenOuterAsks(t, m, p, r)
	if innerShown != 1 || outerN != 1 {
		t.Fatalf("toasts offered to Herdr: %+v\nwant one for the inner agent's question and one (shown) for the outer's, after the inner one ended: one question, one toast", m.h.Notifications())
	}
}

// Standing aside for a wrapper in another terminal of the pane (not
// inside its agent), a wrapper still notifies: its agent is another one,
// whose question nobody else tells of.
func TestAWrapperStandingAsideForAnotherTerminalStillNotifies(t *testing.T) {
	m := newMultiHerdr(t, 1)
	p := m.panes[0]
	first := m.wrap(p, "api", "first", `print first-ready\r\n`, "readline", piDialog, "readline")
	m.waitPane(p, "idle")
	second := m.wrap(p, "web", "second", `print second-ready\r\n`, "readline")
	waitOutput(t, second, "second-ready")
	m.h.WaitFor(t, 30*time.Second, "the second wrapper registered", func() bool { return m.status(p).WrapperPID == second.pid() })
	firstCtl := controlOf(t, first.pid())
	m.h.WaitFor(t, 30*time.Second, "the first wrapper standing aside", func() bool {
		return strings.Contains(herdrLine(firstCtl.status(t, m)), fmt.Sprintf("held by the herdr-pi wrapper pid %d", second.pid()))
	})

	if err := sendKeys(first, "\r"); err != nil {
		t.Fatal(err)
	}
	m.h.WaitFor(t, 30*time.Second, "the first agent's toast", func() bool {
		for _, n := range m.shown() {
			if strings.HasPrefix(n.Body, "first · ") {
				return true
			}
		}
		return false
	})
	if st := m.h.Pane(p); st.Status == "blocked" {
		t.Errorf("the pane shows the first agent's question while the second holds it: %+v", st)
	}
	for _, r := range []*outerRun{first, second} {
		if err := sendKeys(r, "\r"); err != nil {
			t.Fatal(err)
		}
		if st, err := r.wait(30 * time.Second); err != nil || st != 0 {
			t.Fatalf("wrapper %d: exit %d, %v", r.pid(), st, err)
		}
	}
}

// A wrapper started inside another's agent through setsid and a fork
// (setsid -f, which leaves the process tree: the inner wrapper's parent is
// init's, not the outer wrapper's) still runs on the outer agent's
// terminal, and the person still sees its question on one screen: the
// outer wrapper judges it inside by that terminal, stays hushed while it
// holds the pane, and one question gives one toast.
func TestAWrapperStartedThroughSetsidInsideTheAgentIsToastedOnce(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		testenv.Missing(t, "setsid (util-linux)", "install util-linux")
	}
	m := newMultiHerdr(t, 1)
	p := m.panes[0]
	done := filepath.Join(t.TempDir(), "inner-done")
	inner := agentScript(t, `print inner-ready\r\n`, "readline", piDialog, "readline", "pi-idle", `print inner-after\r\n`, "readline")
	outer1 := agentScript(t, `print outer-ready\r\n`, "readline")
	outer2 := agentScript(t, `print outer-back\r\n`, "readline", piDialog, "readline")
	// The shell waits for the inner wrapper by the file it leaves, as it
	// is no child of the shell's.
	shell := fmt.Sprintf(`fakeagent %s; %s -f sh -c "herdr-pi wrap --label inner -- fakeagent %s; : > %s"; while [ ! -e %s ]; do sleep 0.05; done; fakeagent %s`,
		outer1, setsid, inner, done, done, outer2)
	sh := "cd " + m.project("api") + " && exec herdr-pi wrap --label outer -- sh -c '" + shell + "'"
	r, saved := startOuterThenInner(t, m, p, sh)
	var in paneStatus
	m.h.WaitFor(t, 30*time.Second, "the inner wrapper registered", func() bool {
		in = m.status(p)
		return in.WrapperPID != r.pid()
	})
	if descends(in.WrapperPID, r.pid()) {
		t.Fatalf("the inner wrapper pid %d descends from the outer one %d: setsid -f did not leave the tree", in.WrapperPID, r.pid())
	}

	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	m.waitPane(p, "blocked")
	m.h.WaitFor(t, 30*time.Second, "the outer wrapper reading the question too", func() bool {
		return strings.Contains(saved.status(t, m), "state    blocked")
	})
	m.h.WaitFor(t, 30*time.Second, "the inner agent's toast", func() bool { return len(m.shown()) >= 1 })
	if says := herdrLine(saved.status(t, m)); !strings.Contains(says, "inside this one's agent") {
		t.Errorf("the outer wrapper's status says %q, want the inner wrapper inside its agent", says)
	}

	_, innerN, outerN := answerInnerThenOuterAsks(t, m, p, r)
	if innerN != 1 || outerN != 1 {
		t.Fatalf("toasts offered to Herdr: %+v\nwant one for the inner agent's question and one for the outer's own, after the inner one ended", m.h.Notifications())
	}
}

// answerInnerThenOuterAsks answers the inner agent's question (it idles and
// ends), waits for the outer wrapper to hold pane p again, has the outer
// agent ask and waits for that toast, then answers it and waits for the
// outer wrapper to end. It counts the toasts offered to Herdr: the inner
// agent's shown and offered, and the outer agent's.
func answerInnerThenOuterAsks(t *testing.T, m *multiHerdr, p string, r *outerRun) (innerShown, innerN, outerN int) {
	t.Helper()
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "inner-after")
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "outer-back")
	m.h.WaitFor(t, 30*time.Second, "the outer wrapper holding the pane again", func() bool {
		return strings.Contains(herdrLine(m.hookStatus(t, p)), "reporting to pane")
	})
	// The outer agent asks in turn. Its notifier sends in order, so any
	// toast it had for the inner agent's question has been offered before
	// the toast of this one.
	asked := time.Now()
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	m.h.WaitFor(t, 30*time.Second, "the outer agent's own toast", func() bool {
		for _, n := range m.shown() {
			if strings.HasPrefix(n.Body, "outer · ") && n.At.After(asked) {
				return true
			}
		}
		return false
	})
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	if st, err := r.wait(30 * time.Second); err != nil || st != 0 {
		t.Fatalf("outer wrapper: exit %d, %v", st, err)
	}
	for _, n := range m.h.Notifications() {
		switch {
		case strings.HasPrefix(n.Body, "inner · "):
			innerN++
			if n.Shown {
				innerShown++
			}
		case strings.HasPrefix(n.Body, "outer · "):
			outerN++
		}
	}
	return innerShown, innerN, outerN
}

// descends says whether process pid runs under ancestor, as /proc says.
func descends(pid, ancestor int) bool {
	for range 64 {
		st, err := procstat.Read(pid)
		if err != nil || st.Fields < 2 {
			return false
		}
		if st.PPID == ancestor {
			return true
		}
		if st.PPID <= 1 {
			return false
		}
		pid = st.PPID
	}
	return false
}

// startOuterThenInner runs sh in pane p under the outer wrapper (labelled
// outer, its agent a shell that starts the inner one), lets the outer
// agent through its first line and waits for the inner agent's: the
// common start of the nested-wrapper tests. saved reaches the outer
// wrapper's control socket however its agent's environment changes.
func startOuterThenInner(t *testing.T, m *multiHerdr, p, sh string) (*outerRun, wrapperControl) {
	t.Helper()
	r, err := startOuter(outerOptions{Keep: true, Env: m.paneEnv(p), Argv: []string{"sh", "-c", sh}})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "outer-ready")
	saved := controlOf(t, r.pid())
	m.waitPane(p, "idle")
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "inner-ready")
	return r, saved
}

package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// Ten wrappers in ten panes of one Herdr, half of them blocked, when Herdr
// restarts having forgotten every pane: each pane shows its wrapper's
// current state again, those that changed during the outage included,
// and none is left wrong.
func TestTenWrappersReassertAfterHerdrRestarts(t *testing.T) {
	const n = 10
	m := newMultiHerdr(t, n)
	var runs []*outerRun
	for i, p := range m.panes {
		runs = append(runs, m.wrap(p, "api", "agent"+strconv.Itoa(i), `print \e[?2026hready\e[?2026l\r\n`, "readline"))
	}
	for _, p := range m.panes {
		m.waitPane(p, "idle")
	}
	want := make([]string, n)
	for i, p := range m.panes {
		want[i] = "idle"
		if i%2 == 0 {
			m.mustHook(p, "waiting", "start", "--source", "hook", "--id", strconv.Itoa(i))
			want[i] = "blocked"
		}
	}
	for i, p := range m.panes {
		m.waitPane(p, want[i])
	}
	m.h.Crash()
	m.mustHook(m.panes[0], "waiting", "stop", "--source", "hook", "--id", "0")
	m.mustHook(m.panes[1], "waiting", "start", "--source", "hook", "--id", "1")
	want[0], want[1] = "idle", "blocked"
	if err := m.h.Restart(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	for i, p := range m.panes {
		m.waitPane(p, want[i])
	}
	t.Logf("all %d panes right %v after Herdr came back", n, time.Since(back))
	for _, r := range runs {
		if err := sendKeys(r, "\r"); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range runs {
		if st, err := r.wait(30 * time.Second); err != nil || st != 0 {
			t.Fatalf("wrapper: exit %d, %v", st, err)
		}
	}
}

// Thirty panes of one Herdr turn blocked at the same moment: Herdr shows
// every pane blocked, and every pane is named in a toast Herdr showed
// (one a second for all panes: the board names those it held back).
func TestThirtyPanesBlockingAtOnceAreAllShownAndTold(t *testing.T) {
	const n = 30
	m := newMultiHerdr(t, n)
	var runs []*outerRun
	for i, p := range m.panes {
		runs = append(runs, m.wrap(p, "api", fmt.Sprintf("agent%02d", i), `print \e[?2026hready\e[?2026l\r\n`, "readline"))
	}
	for _, p := range m.panes {
		m.waitPane(p, "idle")
	}
	var wg sync.WaitGroup
	for i, p := range m.panes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, errs, code := m.hook(p, "waiting", "start", "--source", "hook", "--id", strconv.Itoa(i)); code != 0 {
				t.Errorf("waiting start in %s: exit %d %s%s", p, code, out, errs)
			}
		}()
	}
	wg.Wait()
	for _, p := range m.panes {
		m.waitPane(p, "blocked")
	}
	m.h.WaitFor(t, 20*time.Second, "every pane named in a toast", func() bool { return len(m.unnamed(n)) == 0 })
	t.Logf("%d toasts shown for %d panes", len(m.shown()), n)
	for _, r := range runs {
		if err := sendKeys(r, "\r"); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range runs {
		if st, err := r.wait(30 * time.Second); err != nil || st != 0 {
			t.Fatalf("wrapper: exit %d, %v", st, err)
		}
	}
}

// A wrapper killed (SIGKILL: none of its code runs) while Herdr held its
// question's toast back: the next toast of another pane does not name
// it. Before, "also asking: kbeta" sent the person looking for a question
// no pane asked, for two minutes.
func TestAKilledWrappersQuestionIsNotNamedByAnotherPanesToast(t *testing.T) {
	m := newMultiHerdr(t, 2)
	a := m.wrap(m.panes[0], "api", "kalpha", `print \e[?2026hready\e[?2026l\r\n`, "readline")
	b := m.wrap(m.panes[1], "api", "kbeta", `print \e[?2026hready\e[?2026l\r\n`, "readline")
	for _, p := range m.panes {
		m.waitPane(p, "idle")
	}
	m.h.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"notification.show"},
		Reply: map[string]any{"result": map[string]any{"type": "notification_show", "shown": false, "reason": "busy"}}})
	m.mustHook(m.panes[1], "waiting", "start", "--source", "hook", "--id", "1")
	m.waitPane(m.panes[1], "blocked")
	m.h.WaitFor(t, 20*time.Second, "kbeta's question on the board", func() bool {
		held, _ := filepath.Glob(filepath.Join(m.runtime, "herdr-pi*", "toasts", "*", "*.held"))
		return len(held) == 1
	})
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = b.wait(30 * time.Second) // gone, whatever its status says
	m.h.SetFaults()
	m.mustHook(m.panes[0], "waiting", "start", "--source", "hook", "--id", "0")
	m.h.WaitFor(t, 20*time.Second, "kalpha's toast shown", func() bool {
		for _, s := range m.shown() {
			if strings.Contains(s.Body, "kalpha") {
				return true
			}
		}
		return false
	})
	for _, s := range m.shown() {
		if strings.Contains(s.Body, "kbeta") {
			t.Fatalf("a killed wrapper's question named: %q", s.Body)
		}
	}
	if err := sendKeys(a, "\r"); err != nil {
		t.Fatal(err)
	}
	if st, err := a.wait(30 * time.Second); err != nil || st != 0 {
		t.Fatalf("wrapper: exit %d, %v", st, err)
	}
}

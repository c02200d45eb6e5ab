package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// multiHerdr is one Herdr with several panes, each running its own
// herdr-pi wrap, as a person running several agents at once has it. All
// wrappers share one runtime directory (so one pane registry) as they do
// on one machine.
type multiHerdr struct {
	t       *testing.T
	h       *herdrtest.Server
	dir     string
	runtime string
	env     []string // without Herdr's pane variables
	panes   []string
}

// newMultiHerdr starts a fake Herdr whose toasts are shown and splits its
// first pane until it has n panes.
func newMultiHerdr(t *testing.T, n int) *multiHerdr {
	t.Helper()
	h := herdrtest.Start(t, herdrtest.Options{Delivery: "herdr"})
	dir := t.TempDir()
	rt, err := os.MkdirTemp("/tmp", "hpm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	m := &multiHerdr{t: t, h: h, dir: dir, runtime: rt, panes: []string{h.PaneID()}}
	m.env = linkCommands(t, dir, "XDG_RUNTIME_DIR="+rt, shownAsPi(t))
	c := herdr.NewClient(h.SocketPath())
	for len(m.panes) < n {
		p, err := c.PaneSplit(context.Background(), herdr.Split{TargetPaneID: h.PaneID(), Direction: "right"})
		if err != nil {
			t.Fatal(err)
		}
		m.panes = append(m.panes, p.PaneID)
	}
	h.ClearRecords()
	return m
}

// paneEnv is the environment Herdr gives a process in pane.
func (m *multiHerdr) paneEnv(pane string) []string {
	env := append([]string(nil), m.env...)
	for _, kv := range m.h.Env() {
		if strings.HasPrefix(kv, "HERDR_PANE_ID=") {
			kv = "HERDR_PANE_ID=" + pane
		}
		env = append(env, kv)
	}
	return env
}

// project makes (once) and returns a project directory named name.
func (m *multiHerdr) project(name string) string {
	p := filepath.Join(m.dir, name)
	if err := os.MkdirAll(p, 0o700); err != nil {
		m.t.Fatal(err)
	}
	return p
}

// wrap starts `herdr-pi wrap [--label label] -- fakeagent SCRIPT` in pane,
// in the project directory named project.
func (m *multiHerdr) wrap(pane, project, label string, lines ...string) *outerRun {
	m.t.Helper()
	argv := []string{"herdr-pi", "wrap"}
	if label != "" {
		argv = append(argv, "--label", label)
	}
	argv = append(argv, "--", "fakeagent", agentScript(m.t, lines...))
	sh := "cd " + m.project(project) + " && exec " + strings.Join(argv, " ")
	r, err := startOuter(outerOptions{Keep: true, Env: m.paneEnv(pane), Argv: []string{"sh", "-c", sh}})
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = r.cmd.Process.Kill()
		}
	})
	return r
}

// hook runs herdr-pi ARGS as a Herdr pane hook of pane does: Herdr's
// variables, none of the wrapper's.
func (m *multiHerdr) hook(pane string, args ...string) (stdout, stderr string, code int) {
	m.t.Helper()
	cmd := exec.Command("herdr-pi", args...)
	cmd.Env = m.paneEnv(pane)
	path, err := lookPathIn("herdr-pi", cmd.Env)
	if err != nil {
		m.t.Fatal(err)
	}
	cmd.Path = path
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), exitStatus(err)
}

// mustHook is hook for a command that must succeed.
func (m *multiHerdr) mustHook(pane string, args ...string) {
	m.t.Helper()
	if out, errs, code := m.hook(pane, args...); code != 0 {
		m.t.Fatalf("herdr-pi %s in pane %s: exit %d\n%s%s", strings.Join(args, " "), pane, code, out, errs)
	}
}

// paneStatus is what `herdr-pi status --json` says, in the part these
// tests read.
type paneStatus struct {
	WrapperPID int    `json:"wrapper_pid"`
	Label      string `json:"label"`
	Cwd        string `json:"cwd"`
	State      string `json:"state"`
	Reasons    []struct {
		Key string `json:"key"`
	} `json:"reasons"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func (st paneStatus) keys() []string {
	var out []string
	for _, r := range st.Reasons {
		out = append(out, r.Key)
	}
	return out
}

// status is `herdr-pi status --json` run from pane's hook.
func (m *multiHerdr) status(pane string) paneStatus {
	m.t.Helper()
	out, errs, code := m.hook(pane, "status", "--json")
	var st paneStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil || (code == 0) != (st.Error == nil) {
		m.t.Fatalf("status in %s (exit %d): %v\n%s%s", pane, code, err, out, errs)
	}
	return st
}

// waitPane waits until Herdr shows pane in status.
func (m *multiHerdr) waitPane(pane, status string) {
	m.t.Helper()
	m.h.WaitFor(m.t, 30*time.Second, fmt.Sprintf("pane %s %s", pane, status), func() bool {
		return m.h.Pane(pane).Status == status
	})
}

func (m *multiHerdr) shown() []herdrtest.NotificationCall {
	var out []herdrtest.NotificationCall
	for _, n := range m.h.Notifications() {
		if n.Shown {
			out = append(out, n)
		}
	}
	return out
}

// unnamed lists the panes labelled agent00 to agent<n-1> that no toast
// Herdr showed names.
func (m *multiHerdr) unnamed(n int) (out []string) {
	shown := m.shown()
	for i := range n {
		name := fmt.Sprintf("agent%02d", i)
		if !slices.ContainsFunc(shown, func(s herdrtest.NotificationCall) bool { return strings.Contains(s.Body, name) }) {
			out = append(out, name)
		}
	}
	return out
}

// pid is the wrapper's pid: wrap is exec'd by the shell that went to the
// project directory.
func (r *outerRun) pid() int { return r.cmd.Process.Pid }

// Four agents in four panes of one Herdr, three in the same project, as a
// person runs them all day: each pane's reports go to that pane only and
// never carry another's state; hooks run from a pane (Herdr's variables
// only, so found through the pane registry) reach that pane's wrapper,
// the oldest as well as the newest; three panes blocking at the same
// moment are each named in a toast, none lost to Herdr's one-a-second
// limit; after Herdr restarts every pane shows its wrapper's
// current state again; one wrapper's exit releases its pane alone and
// leaves the others' registry entries.
func TestSeveralPanesEachReportTheirOwnAgent(t *testing.T) {
	m := newMultiHerdr(t, 4)
	projects := []string{"api", "api", "web", "api"}
	labels := []string{"backend", "tests", "", "docs"}
	var runs []*outerRun
	for i, p := range m.panes {
		runs = append(runs, m.wrap(p, projects[i], labels[i], `print \e[?2026hready\e[?2026l\r\n`, "readline"))
	}
	for _, p := range m.panes {
		m.waitPane(p, "idle")
	}
	for i, p := range m.panes {
		st := m.status(p)
		if st.WrapperPID != runs[i].pid() || st.Label != labels[i] || filepath.Base(st.Cwd) != projects[i] || st.State != "idle" {
			t.Fatalf("status from pane %s's hook: %+v, want wrapper %d labelled %q in %s, idle", p, st, runs[i].pid(), labels[i], projects[i])
		}
	}

	// Three panes block at once; the fourth stays idle.
	blocked := m.panes[:3]
	done := make(chan string)
	for i, p := range blocked {
		go func() {
			out, errs, code := m.hook(p, "waiting", "start", "--source", "hook", "--id", strconv.Itoa(i))
			done <- fmt.Sprintf("pane %s: exit %d %s%s", p, code, out, errs)
		}()
	}
	for range blocked {
		if res := <-done; !strings.Contains(res, "exit 0 ") {
			t.Errorf("herdr-pi waiting start from a hook: %s", res)
		}
	}
	for _, p := range blocked {
		m.waitPane(p, "blocked")
	}
	// Herdr shows one toast a second for all panes: a pane whose toast it
	// held back is named by the next one it shows (blocked.md, "Many
	// panes asking at once").
	names := []string{"backend", "tests", "web"}
	named := func() (missing []string) {
		for _, name := range names {
			told := false
			for _, n := range m.shown() {
				told = told || strings.Contains(n.Body, name)
			}
			if !told {
				missing = append(missing, name)
			}
		}
		return missing
	}
	m.h.WaitFor(t, 30*time.Second, "every blocked pane named in a toast", func() bool { return len(named()) == 0 })
	for _, n := range m.shown() {
		if n.Title != "Pi needs your input" || strings.Contains(n.Body, "docs") {
			t.Errorf("toast %+v (docs stays idle)", n)
		}
	}
	for i, p := range m.panes {
		st := m.status(p)
		wantKeys := []string{"hook:hook:" + strconv.Itoa(i)}
		if i == 3 {
			wantKeys = nil
		}
		if !slices.Equal(st.keys(), wantKeys) {
			t.Errorf("pane %s's wrapper has reasons %q, want %q", p, st.keys(), wantKeys)
		}
	}
	for _, c := range m.h.Reports(m.panes[3]) {
		if c.State != "unknown" && c.State != "idle" {
			t.Fatalf("the idle pane %s was reported %s: %+v", m.panes[3], c.State, m.h.Reports(m.panes[3]))
		}
	}

	// Herdr goes away; two panes change meanwhile; it comes back having
	// forgotten every pane's state.
	m.h.Crash()
	m.mustHook(m.panes[0], "waiting", "stop", "--source", "hook", "--id", "0")
	m.mustHook(m.panes[3], "waiting", "start", "--source", "hook", "--id", "3")
	if err := m.h.Restart(); err != nil {
		t.Fatal(err)
	}
	for i, p := range m.panes {
		want := "blocked"
		if i == 0 {
			want = "idle"
		}
		m.waitPane(p, want)
	}

	// The second pane's agent ends: its pane is released, the others keep
	// their wrappers and states.
	if err := sendKeys(runs[1], "\r"); err != nil {
		t.Fatal(err)
	}
	if st, err := runs[1].wait(30 * time.Second); err != nil || st != 0 {
		t.Fatalf("pane %s's wrapper: exit %d, %v", m.panes[1], st, err)
	}
	if st := m.h.Pane(m.panes[1]); st.Agent != "" {
		t.Errorf("pane %s still shows %+v after its wrapper ended", m.panes[1], st)
	}
	if st := m.status(m.panes[1]); st.Error == nil || st.Error.Code != "no_wrapper" {
		t.Errorf("status from the ended pane %s: %+v", m.panes[1], st)
	}
	for _, i := range []int{0, 2, 3} {
		if st := m.status(m.panes[i]); st.WrapperPID != runs[i].pid() {
			t.Errorf("status from pane %s after pane %s's wrapper ended: %+v, want wrapper %d", m.panes[i], m.panes[1], st, runs[i].pid())
		}
	}
	for _, i := range []int{0, 2, 3} {
		if err := sendKeys(runs[i], "\r"); err != nil {
			t.Fatal(err)
		}
		if st, err := runs[i].wait(30 * time.Second); err != nil || st != 0 {
			t.Fatalf("pane %s's wrapper: exit %d, %v", m.panes[i], st, err)
		}
	}
	if ents, err := os.ReadDir(m.registryDir()); err != nil || len(ents) != 0 {
		t.Errorf("the pane registry after every wrapper ended: %v %v", ents, err)
	}
}

func sendKeys(r *outerRun, s string) error {
	_, err := r.master.Write([]byte(s))
	return err
}

// registryDir is the pane registry every wrapper of m registers in.
func (m *multiHerdr) registryDir() string {
	return filepath.Join(m.runtime, fmt.Sprintf("herdr-pi-%d", os.Getuid()), "panes")
}

// A wrapper started inside another's agent in the same pane (herdr-pi wrap
// bash, and in that shell herdr-pi wrap pi) takes the pane over while it
// runs — Herdr shows its agent, pane hooks reach it, its toasts carry its
// label — and hands the pane back when it ends: the outer wrapper, still
// running, is the one hooks reach again, and Herdr shows its state.
func TestANestedWrapperHandsThePaneBack(t *testing.T) {
	m := newMultiHerdr(t, 1)
	p := m.panes[0]
	inner := agentScript(t, `print inner-ready\r\n`, "readline")
	outer1 := agentScript(t, `print outer-ready\r\n`, "readline")
	outer2 := agentScript(t, `print outer-back\r\n`, "readline")
	shell := fmt.Sprintf("fakeagent %s; herdr-pi wrap --label inner -- fakeagent %s; fakeagent %s", outer1, inner, outer2)
	sh := "cd " + m.project("api") + " && exec herdr-pi wrap --label outer -- sh -c '" + shell + "'"
	r, err := startOuter(outerOptions{Keep: true, Env: m.paneEnv(p), Argv: []string{"sh", "-c", sh}})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "outer-ready")
	m.waitPane(p, "idle")
	outer := m.status(p)
	if outer.WrapperPID != r.pid() || outer.Label != "outer" {
		t.Fatalf("status from the pane's hook: %+v, want the outer wrapper %d", outer, r.pid())
	}

	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "inner-ready")
	var in paneStatus
	m.h.WaitFor(t, 30*time.Second, "the inner wrapper registered", func() bool {
		in = m.status(p)
		return in.WrapperPID != outer.WrapperPID
	})
	if in.Label != "inner" {
		t.Fatalf("status from the pane's hook while the inner wrapper runs: %+v", in)
	}
	m.mustHook(p, "waiting", "start", "--source", "hook", "--id", "inner")
	m.waitPane(p, "blocked")
	m.h.WaitFor(t, 30*time.Second, "the inner agent's toast", func() bool { return len(m.shown()) == 1 })
	if n := m.shown()[0]; n.Body != "inner · api" {
		t.Fatalf("toast %+v, want it from the inner wrapper", n)
	}

	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "outer-back")
	if bytes.Contains(r.bytes(), []byte("another herdr-pi wrapper")) {
		t.Fatalf("the nested wrapper took its outer one for another's:\n%q", r.bytes())
	}
	// The pane's hooks reach the outer wrapper again, and Herdr shows its
	// state.
	if st := m.status(p); st.WrapperPID != r.pid() {
		t.Fatalf("status from the pane's hook after the inner wrapper ended: %+v, want the outer wrapper %d", st, r.pid())
	}
	m.waitPane(p, "idle")
	m.mustHook(p, "waiting", "start", "--source", "hook", "--id", "outer")
	m.waitPane(p, "blocked")
	if st := m.status(p); !slices.Equal(st.keys(), []string{"hook:hook:outer"}) {
		t.Fatalf("the outer wrapper's reasons: %q", st.keys())
	}
	m.h.WaitFor(t, 30*time.Second, "the outer agent's toast", func() bool { return len(m.shown()) == 2 })
	if n := m.shown()[1]; n.Body != "outer · api" {
		t.Fatalf("toast %+v, want it from the outer wrapper", n)
	}
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	if st, err := r.wait(30 * time.Second); err != nil || st != 0 {
		t.Fatalf("outer wrapper: exit %d, %v", st, err)
	}
	if ents, err := os.ReadDir(m.registryDir()); err != nil || len(ents) != 0 {
		t.Errorf("the pane registry after both wrappers ended: %v %v", ents, err)
	}
	if st := m.h.Pane(p); st.Agent != "" {
		t.Errorf("the pane still shows %+v", st)
	}
}

// Two terminals in one Herdr pane (tmux inside it), each running herdr-pi
// wrap, is a mistake: both report to the one pane. The second says so
// as it starts, naming the first; the pane's hooks reach it while it
// runs, and the first again once it ends, whose state Herdr then shows.
func TestASecondWrapperInAPaneSaysItSharesIt(t *testing.T) {
	m := newMultiHerdr(t, 1)
	p := m.panes[0]
	first := m.wrap(p, "api", "first", `print first-ready\r\n`, "readline")
	m.waitPane(p, "idle")
	m.mustHook(p, "waiting", "start", "--source", "hook", "--id", "first")
	m.waitPane(p, "blocked")

	second := m.wrap(p, "web", "second", `print second-ready\r\n`, "readline")
	waitOutput(t, second, "second-ready")
	want := fmt.Sprintf("herdr-pi: another herdr-pi wrapper (pid %d) runs in Herdr pane %s too", first.pid(), p)
	if !bytes.Contains(second.bytes(), []byte(want)) {
		t.Fatalf("the second wrapper did not say it shares the pane; output:\n%q", second.bytes())
	}
	m.waitPane(p, "idle")
	if st := m.status(p); st.WrapperPID != second.pid() {
		t.Fatalf("status from the pane's hook while both run: %+v, want the second wrapper %d", st, second.pid())
	}

	if err := sendKeys(second, "\r"); err != nil {
		t.Fatal(err)
	}
	if st, err := second.wait(30 * time.Second); err != nil || st != 0 {
		t.Fatalf("the second wrapper: exit %d, %v", st, err)
	}
	if st := m.status(p); st.WrapperPID != first.pid() || !slices.Equal(st.keys(), []string{"hook:hook:first"}) {
		t.Fatalf("status from the pane's hook after the second wrapper ended: %+v, want the first wrapper %d", st, first.pid())
	}
	m.waitPane(p, "blocked")
	if bytes.Contains(first.bytes(), []byte("another herdr-pi wrapper")) {
		t.Fatalf("the first wrapper said it shares the pane:\n%q", first.bytes())
	}
	if err := sendKeys(first, "\r"); err != nil {
		t.Fatal(err)
	}
	if st, err := first.wait(30 * time.Second); err != nil || st != 0 {
		t.Fatalf("the first wrapper: exit %d, %v", st, err)
	}
	if ents, err := os.ReadDir(m.registryDir()); err != nil || len(ents) != 0 {
		t.Errorf("the pane registry after both wrappers ended: %v %v", ents, err)
	}
}

// waitOutput waits until the terminal has shown s.
func waitOutput(t *testing.T, r *outerRun, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !bytes.Contains(r.bytes(), []byte(s)) {
		if time.Now().After(deadline) {
			t.Fatalf("%q never appeared; output:\n%q", s, tailOf(r.bytes()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two real Pis in two panes of one Herdr, in one project: the first
// without the probe (--no-probe, or a launcher herdr-pi cannot see
// through), which finds its session file by looking for the newest one
// in the project's session directory, the second with it. The second's
// question (a reply ending with the marker) blocks its own pane only: the
// first Pi, idle, then busy with a prompt of its own, is never reported
// blocked because the other pane's file was the newest in the directory.
func TestAPiWithoutTheProbeNeverTakesAnotherPanesQuestion(t *testing.T) {
	r := newPiRig(t, answerOr(), true)
	split, err := herdr.NewClient(r.herdr.SocketPath()).PaneSplit(context.Background(), herdr.Split{TargetPaneID: r.herdr.PaneID(), Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	other := split.PaneID
	statesOf := func(pane string) func() []string {
		return func() []string {
			var out []string
			for _, c := range r.herdr.Reports(pane) {
				if c.Accepted {
					out = append(out, c.State)
				}
			}
			return out
		}
	}
	// The answer to the Pi without the probe is held until its pane shows
	// the run: seen on the screen only, after the debounce, a run quicker
	// than that would reach Herdr as no change at all.
	r.llm.SetResponder(func(req fakellm.Request) fakellm.Reply {
		reply := r.respond(req)
		if strings.Contains(req.LastUser(), "ANSWER") {
			return untilLastWorking(statesOf(other), reply)
		}
		return reply
	})
	// Pi's argv ends after its binary: r.pi.Bin takes no herdr-pi flag.
	argv := []string{r.hp, "wrap", "--no-probe", r.pi.Bin}
	noProbe := pitest.StartTerm(t, argv, r.env("HERDR_PANE_ID="+other), r.agent.Project, 40, 120)
	t.Cleanup(noProbe.Close)
	waitEditor(t, noProbe)
	r.waitStatesOf("the Pi without the probe at rest", statesOf(other), []string{"unknown", "idle"})

	probed := r.wrap()
	r.waitStates("the probe connected", "unknown", "idle")
	probed.Type(t, "hello")
	r.waitStates("the question", "unknown", "idle", "working", "blocked(input needed)")

	// The Pi without the probe gets a prompt of its own and answers it.
	asked := len(r.llm.Requests())
	noProbe.Type(t, "ANSWER: nothing to do")
	for deadline := time.Now().Add(30 * time.Second); len(r.llm.Requests()) == asked; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the prompt never reached the model:\n%s", noProbe.Screen())
		}
		if strings.Contains(noProbe.Screen(), "Startup is still in progress") {
			_ = noProbe.Send("\r")
		}
	}
	noProbe.WaitText(t, "Done.", 30*time.Second)
	r.herdr.WaitFor(t, 30*time.Second, "the Pi without the probe idle again", func() bool {
		s := statesOf(other)()
		return len(s) > 2 && s[len(s)-1] == "idle"
	})
	if s := statesOf(other)(); slices.Contains(s, "blocked") {
		t.Fatalf("pane %s (no probe) was reported %q: it took pane %s's question for its own", other, s, r.herdr.PaneID())
	}
	if s := r.states(); s[len(s)-1] != "blocked(input needed)" {
		t.Fatalf("pane %s (the question's) reports %q", r.herdr.PaneID(), s)
	}
	// Both Pis end before their directories are removed.
	quit(t, noProbe)
	quit(t, probed)
}

// Two unlabelled Pis in one project, in two tabs, block one after the
// other: their toasts would both read "api", so each names its tab; a
// third in its own project says nothing more (blocked.md, "Many panes
// asking at once").
func TestNamesakePanesToastTheirTabs(t *testing.T) {
	m := newMultiHerdr(t, 2)
	c := herdr.NewClient(m.h.SocketPath())
	first, err := c.PaneGet(context.Background(), m.panes[0])
	if err != nil {
		t.Fatal(err)
	}
	_, root, err := c.TabCreate(context.Background(), first.WorkspaceID, herdr.NewPlace{Label: "review"})
	if err != nil {
		t.Fatal(err)
	}
	panes := []string{m.panes[0], root.PaneID, m.panes[1]}
	projects := []string{"api", "api", "web"}
	var runs []*outerRun
	for i, p := range panes {
		runs = append(runs, m.wrap(p, projects[i], "", `print \e[?2026hready\e[?2026l\r\n`, "readline"))
	}
	for _, p := range panes {
		m.waitPane(p, "idle")
	}
	for i, p := range panes {
		m.mustHook(p, "waiting", "start", "--source", "hook", "--id", strconv.Itoa(i))
		m.h.WaitFor(t, 30*time.Second, "the toast of pane "+p, func() bool { return len(m.shown()) == i+1 })
	}
	var bodies []string
	for _, n := range m.shown() {
		bodies = append(bodies, n.Body)
	}
	if want := []string{"api · tab 1", "api · tab review", "web"}; !slices.Equal(bodies, want) {
		t.Fatalf("toasts %q, want %q", bodies, want)
	}
	for _, r := range runs {
		if err := sendKeys(r, "\r"); err != nil {
			t.Fatal(err)
		}
		if st, err := r.wait(30 * time.Second); err != nil || st != 0 {
			t.Fatalf("wrapper: exit %d, %v", st, err)
		}
	}
}

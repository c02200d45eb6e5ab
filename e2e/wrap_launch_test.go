package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/pane/session"
)

// These tests start a real Pi 1.6.0 the ways people start it — through
// node, through npx — and check that herdr-pi still hears it (the probe
// connects, a question turns the pane blocked), that its start screen is
// Pi's, and that it says how to resume under herdr-pi when Pi says how to
// resume.

// piCLI is the script the installed `pi` command runs (…/dist/bundle/cli.js).
func (r *piRig) piCLI() string {
	cli, err := filepath.EvalSymlinks(r.pi.Bin)
	if err != nil {
		r.t.Fatal(err)
	}
	return cli
}

// wrapArgv starts `herdr-pi wrap <args…>` in the project and waits for
// Pi's editor. The pty is 40x250: wide enough for a resume command with
// long paths to stay on one row.
func (r *piRig) wrapArgv(env []string, args ...string) *pitest.Term {
	r.t.Helper()
	tm := pitest.StartTerm(r.t, append([]string{r.hp, "wrap"}, args...), env, r.agent.Project, 40, 250)
	r.t.Cleanup(tm.Close)
	waitEditor(r.t, tm)
	return tm
}

func waitEditor(t *testing.T, tm *pitest.Term) string {
	t.Helper()
	return tm.WaitFor(t, "Pi's editor", 2*time.Minute, func(s string) bool {
		return strings.Count(s, strings.Repeat("─", 100)) >= 2
	})
}

// waitProbe waits until the wrapper in the pane says the probe inside Pi
// reached it (Pi may draw its idle screen before the probe connects).
func (r *piRig) waitProbe() {
	r.t.Helper()
	var out string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, err := r.herdrPi("status", "--json")
		if out = b; err != nil {
			continue
		}
		var st struct {
			ProbeConnected bool `json:"probe_connected"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			r.t.Fatalf("status %s: %v", out, err)
		}
		if st.ProbeConnected {
			return
		}
	}
	r.t.Fatalf("the probe never connected; status:\n%s", out)
}

// sessionID is the id of the one session file Pi wrote.
func (r *piRig) sessionID() string {
	r.t.Helper()
	files := r.agent.SessionFiles()
	if len(files) != 1 {
		r.t.Fatalf("session files %q", files)
	}
	_, id, _ := strings.Cut(strings.TrimSuffix(filepath.Base(files[0]), ".jsonl"), "_")
	return id
}

// lastLines are the last n non-blank lines of a screen.
func lastLines(screen string, n int) []string {
	var lines []string
	for _, l := range strings.Split(screen, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimRight(l, " "))
		}
	}
	return lines[max(0, len(lines)-n):]
}

// `wrap --agent pi -- node [node options] <pi's cli.js>` gives the probe to
// Pi, not to node: before, node took `-e <probe>` as code to evaluate and
// died with a SyntaxError. Pi's resume hint gets its herdr-pi twin, which
// keeps --agent and the node command.
func TestWrapPiUnderNode(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: question + "\n" + session.Marker}), true)
	r.answerOnceWorking()
	cli := r.piCLI()
	tm := r.wrapArgv(r.env(), "--agent", "pi", "--", "node", "--enable-source-maps", cli)
	r.waitProbe()
	r.waitStates("the start", "unknown", "idle")
	tm.Type(t, "hello")
	r.waitStates("the question", "unknown", "idle", "working", "blocked(input needed)")
	if markerVisible(tm.Screen()) {
		t.Fatalf("the probe did not hide the marker:\n%s", tm.Screen())
	}

	quit(t, tm)
	id := r.sessionID()
	want := []string{"To resume this session:", "pi --session " + id,
		"herdr-pi wrap --agent pi node --enable-source-maps " + cli + " --session " + id}
	if got := lastLines(tm.Screen(), 3); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("end of the screen:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// npxProject makes the project a place where `npx pi` finds a local Pi
// (node_modules/.bin/pi, as `npm install` leaves it) and npm stays offline
// and quiet.
func (r *piRig) npxProject() []string {
	r.t.Helper()
	if _, err := exec.LookPath("npx"); err != nil {
		testenv.Missing(r.t, "npx", "apt-get install npm")
	}
	pkg := filepath.Dir(filepath.Dir(filepath.Dir(r.piCLI()))) // …/@earendil-works/pi-coding-agent
	mods := filepath.Join(r.agent.Project, "node_modules")
	for _, d := range []string{filepath.Join(mods, ".bin"), filepath.Join(mods, "@earendil-works")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := os.Symlink(pkg, filepath.Join(mods, "@earendil-works", "pi-coding-agent")); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Symlink("../@earendil-works/pi-coding-agent/dist/bundle/cli.js", filepath.Join(mods, ".bin", "pi")); err != nil {
		r.t.Fatal(err)
	}
	return r.env("npm_config_offline=true", "npm_config_update_notifier=false", "npm_config_fund=false",
		"npm_config_cache="+filepath.Join(r.private, "npm"))
}

// `wrap -- npx pi` (no --agent) is Pi: the probe goes after the package,
// the session file is followed, and a question turns the pane blocked.
// Before, npx was not recognised as Pi: no probe, no session file, never
// blocked.
func TestWrapNpxPi(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: question + "\n" + session.Marker}), true)
	r.answerOnceWorking()
	env := r.npxProject()
	tm := r.wrapArgv(env, "--", "npx", "pi")
	r.waitProbe()
	r.waitStates("the start", "unknown", "idle")
	tm.Type(t, "hello")
	r.waitStates("the question", "unknown", "idle", "working", "blocked(input needed)")
	reqs := r.llm.Requests()
	if len(reqs) == 0 || !strings.Contains(reqs[0].System(), "<herdr_integration>") {
		t.Fatal("the model never got the guidance: the probe is not in Pi")
	}
	quit(t, tm)
	id := r.sessionID()
	if got := lastLines(tm.Screen(), 1)[0]; got != "herdr-pi wrap npx pi --session "+id {
		t.Fatalf("resume line %q\n%s", got, tm.Screen())
	}
}

// `wrap -- npx pi` follows Pi's session file like `wrap pi`, and that
// alone turns the pane blocked: here the probe is off (the runtime
// directory is not private, so wrap opens no control socket). Before, npx
// was not recognised as Pi and the pane never turned blocked.
func TestWrapNpxPiFollowsTheSessionFile(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: question + "\n" + session.Marker}), true)
	shared := filepath.Join(r.private, "shared")
	if err := os.MkdirAll(filepath.Join(shared, fmt.Sprintf("herdr-pi-%d", os.Getuid())), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(shared, fmt.Sprintf("herdr-pi-%d", os.Getuid())), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(r.npxProject(), "XDG_RUNTIME_DIR="+shared)
	tm := r.wrapArgv(env, "--", "npx", "pi")
	tm.Type(t, "hello")
	r.submitted(tm)
	tm.WaitText(t, question, 20*time.Second)
	// A short turn without the probe may not be reported as working (the
	// reporter coalesces short spells); blocked is what must arrive.
	r.herdr.WaitFor(t, 2*time.Minute, "the question, from the session file: blocked(input needed)", func() bool {
		st := r.states()
		return len(st) > 0 && st[len(st)-1] == "blocked(input needed)"
	})
	for _, req := range r.llm.Requests() {
		if strings.Contains(req.System(), "<herdr_integration>") {
			t.Fatal("the probe was in Pi; this test needs it off")
		}
	}
	quit(t, tm)
}

// `wrap -- npx pi -p …` is Pi's print mode: a pure passthrough, with the
// same output as npx alone (no pty, so no carriage returns). Before, npx
// was not recognised as Pi and ran under a pty.
func TestWrapNpxPiPrintIsPassthrough(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "line one\nline two"}), true)
	env := r.npxProject()
	run := func(argv ...string) (string, int) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env, cmd.Dir = env, r.agent.Project
		var out strings.Builder
		cmd.Stdout = &out
		err := cmd.Run()
		return out.String(), exitStatus(err)
	}
	bare, bareCode := run("npx", "pi", "-p", "hi")
	wrapped, wrappedCode := run(r.hp, "wrap", "--", "npx", "pi", "-p", "hi")
	if bare != wrapped || bareCode != wrappedCode || bareCode != 0 || !strings.Contains(bare, "line two") {
		t.Fatalf("bare npx pi -p: %q exit %d; wrapped: %q exit %d", bare, bareCode, wrapped, wrappedCode)
	}
	if m := r.herdr.Methods(); len(m) != 0 {
		t.Fatalf("print mode talked to Herdr: %q", m)
	}
}

// After one exchange, Ctrl-D: Pi prints how to resume, and herdr-pi adds
// the same under herdr-pi, one line below. That line resumes the session.
// With --no-session Pi prints no hint, and neither does herdr-pi.
func TestWrapPiResumeHint(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "Noted, nothing to do."}), false)
	tm := r.wrap()
	tm.Type(t, "remember the colour teal")
	tm.WaitText(t, "Noted, nothing to do.", 20*time.Second)
	tm.WaitFor(t, "the run to end", 2*time.Minute, func(s string) bool { return len(r.agent.SessionFiles()) == 1 })
	if err := tm.Send("\x04"); err != nil { // Ctrl-D on the empty editor quits
		t.Fatal(err)
	}
	if code, err := tm.ExitCode(15 * time.Second); err != nil || code != 0 {
		t.Fatalf("Ctrl-D: exit %d, %v\n%s", code, err, tm.Screen())
	}
	id := r.sessionID()
	line := "herdr-pi wrap " + r.pi.Bin + " --session " + id
	want := []string{"To resume this session:", "pi --session " + id, line}
	if got := lastLines(tm.Screen(), 3); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("end of the screen:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The line is a command that works: the session comes back.
	words := strings.Fields(line)
	again := r.wrapArgv(r.env(), words[2:]...)
	again.WaitText(t, "remember the colour teal", 10*time.Second)
	quit(t, again)
	if got := lastLines(again.Screen(), 1)[0]; got != line {
		t.Fatalf("resumed session's resume line %q, want %q", got, line)
	}

	none := r.wrapArgv(r.env(), r.pi.Bin, "--no-session")
	quit(t, none)
	if s := none.Screen(); strings.Contains(s, "resume") || strings.Contains(s, "herdr-pi wrap") {
		t.Fatalf("a hint without a session:\n%s", s)
	}
}

// samePi compares two of Pi's start screens, modulo what Pi itself varies
// from one start to the next: it looks for fd and rg at the same time and
// warns about each as its search ends, in either order.
func samePi(a, b string) bool {
	return sortWarnings(a) == sortWarnings(b)
}

func sortWarnings(screen string) string {
	lines := strings.Split(screen, "\n")
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && strings.HasPrefix(lines[j], " Warning: ") {
			j++
		}
		slices.Sort(lines[i:j])
		i = j + 1
	}
	return strings.Join(lines, "\n")
}

// Pi's first screen under wrap is bare Pi's, in the same agent dir at the
// same size, both with one extension of the user's (ready.mjs): with
// quietStartup, and with Pi's full start-up listing, where the probe,
// started through Pi's own entry as a hidden extension, is not listed.
// Only where the probe has to go in with -e (behind npx) does the listing
// name it, and that is the one difference (docs/troubleshooting.md).
func TestWrapPiStartScreenIsPis(t *testing.T) {
	ready, err := filepath.Abs("realpi/testdata/ready.mjs")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		quiet  bool
		cmd    func(r *piRig) ([]string, []string) // Pi's command, its env
		listed bool                                // the probe goes in with -e
	}{
		{"quiet", true, func(r *piRig) ([]string, []string) { return []string{r.pi.Bin}, r.env() }, false},
		{"full", false, func(r *piRig) ([]string, []string) { return []string{r.pi.Bin}, r.env() }, false},
		{"full node", false, func(r *piRig) ([]string, []string) {
			return []string{filepath.Join(r.pi.NodeDir, "node"), r.piCLI()}, r.env()
		}, false},
		{"full npx", false, func(r *piRig) ([]string, []string) { return []string{"npx", "pi"}, r.npxProject() }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), true)
			if !tt.quiet {
				settings := `{"defaultProvider": "fake", "defaultModel": "fake-model", "enableInstallTelemetry": false}`
				if err := os.WriteFile(filepath.Join(r.agent.AgentDir, "settings.json"), []byte(settings), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			argv, env := tt.cmd(r)
			argv = append(argv, "-e", ready)
			bare := pitest.StartTerm(t, argv, env, r.agent.Project, 40, 120)
			wrapped := pitest.StartTerm(t, append([]string{r.hp, "wrap", "--"}, argv...), env, r.agent.Project, 40, 120)
			// ready.mjs's status is drawn once Pi bound its extensions; the
			// full listing comes with it.
			started := func(s string) bool {
				return strings.Contains(s, "started") && (tt.quiet || strings.Contains(s, "ready.mjs"))
			}
			b := bare.WaitFor(t, "bare Pi started", 2*time.Minute, started)
			w := wrapped.WaitFor(t, "wrapped Pi started", 2*time.Minute, started)
			if tt.listed {
				// The only difference: the probe in the compact list.
				w = strings.Replace(w, "\n  herdr-pi-probe.mjs, ready.mjs\n", "\n  ready.mjs\n", 1)
			}
			if !samePi(w, b) {
				t.Fatalf("start screens differ\nbare:\n%s\nwrapped:\n%s", b, w)
			}
			if !tt.quiet && !strings.Contains(b, "[Extensions]") {
				t.Fatalf("not Pi's full start-up:\n%s", b)
			}
			quit(t, bare)
			quit(t, wrapped)
		})
	}
}

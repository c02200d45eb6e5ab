package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// agentScript writes a fakeagent script into dir.
func agentScript(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Outside Herdr, a blocked agent produces exactly one desktop notification
// in the terminal's own protocol — OSC 777 for Warp — written by the copy
// loop between the agent's own output.
func TestWrapNotifiesTheTerminalOutsideHerdr(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, "api-service")
	if err := os.Mkdir(project, 0o700); err != nil {
		t.Fatal(err)
	}
	script := agentScript(t,
		`print \e[?2026hready\e[?2026l\r\n`,
		"run herdr-pi waiting start --source deploy --id 1 --label approve",
		"sleep 400ms",
		"run herdr-pi waiting stop --source deploy --id 1",
		"sleep 300ms",
	)
	env := append(os.Environ(), "TERM_PROGRAM=WarpTerminal", "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir, shownAsPi(t))
	env = withoutHerdr(env)
	r, err := startOuter(outerOptions{Keep: true, Env: env, Argv: []string{"sh", "-c", "cd " + project + " && exec herdr-pi wrap -- fakeagent " + script}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v\n%q", status, err, r.bytes())
	}
	want := []byte("\x1b]777;notify;Pi needs your input;approve · api-service\x1b\\")
	if got := r.bytes(); bytes.Count(got, want) != 1 || bytes.Count(got, []byte("\x1b]777;")) != 1 {
		t.Fatalf("want exactly one %q on the terminal, got:\n%q", want, got)
	}
}

// shownAsPi is the environment entry that has wrap show the stand-in
// agent as Pi ([herdr] agent), to Herdr and in its notifications, as a
// real Pi would be; by its own name it would be fakeagent. (--agent pi
// would also take it for Pi's CLI and load the probe into it.)
func shownAsPi(t *testing.T) string {
	config := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(config, []byte("[herdr]\nagent = \"pi\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "HERDR_PI_CONFIG=" + config
}

func withoutHerdr(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HERDR_") || strings.HasPrefix(kv, "HERDR_PI_") {
			out = append(out, kv)
		}
	}
	return out
}

// Inside Herdr, blocked becomes a notification.show: one per blocked
// spell, title and body sanitised, sound none; five blocked spells within
// a second stay within Herdr's one-per-second limit and the last one still
// arrives.
func TestWrapNotifiesThroughHerdr(t *testing.T) {
	dir := t.TempDir()
	h := herdrtest.Start(t, herdrtest.Options{Delivery: "herdr"})
	lines := []string{"print ready\\r\\n"}
	for i := 0; i < 5; i++ {
		lines = append(lines,
			"run herdr-pi waiting start --source burst --id x",
			"run herdr-pi waiting stop --source burst --id x",
			"sleep 150ms")
	}
	lines = append(lines, "sleep 2500ms")
	trace := filepath.Join(dir, "trace.jsonl")
	env := append(withoutHerdr(os.Environ()), "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir, "HERDR_PI_TRACE="+trace, shownAsPi(t))
	env = append(env, h.Env()...)
	start := time.Now()
	r, err := startOuter(outerOptions{Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", agentScript(t, lines...)}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v", status, err)
	}
	// The state machine's own transitions (the reporter coalesces what it
	// sends to Herdr, the notifier paces what it shows).
	var blocked []time.Time
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct {
			To string
			At time.Time
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.To == "blocked" {
			blocked = append(blocked, e.At)
		}
	}
	if len(blocked) != 5 {
		t.Fatalf("%d blocked transitions, want 5:\n%s", len(blocked), data)
	}
	notes := h.Notifications()
	if len(blocked) == 0 || len(notes) == 0 {
		t.Fatalf("blocked reports %d, notifications %+v", len(blocked), notes)
	}
	span := notes[len(notes)-1].At.Sub(start)
	for i, n := range notes {
		if n.Title != "Pi needs your input" || n.Sound != "none" || n.Reason != "shown" {
			t.Errorf("notification %d: %+v", i, n)
		}
		if i > 0 && n.At.Sub(notes[i-1].At) < time.Second {
			t.Errorf("notifications %d and %d only %v apart", i-1, i, n.At.Sub(notes[i-1].At))
		}
	}
	if max := int(span/time.Second) + 1; len(notes) > max {
		t.Errorf("%d notifications in %v, Herdr allows at most %d", len(notes), span, max)
	}
	if last := notes[len(notes)-1].At; last.Before(blocked[len(blocked)-1]) {
		t.Errorf("the last blocked spell (%v) was never notified; last notification at %v", blocked[len(blocked)-1], last)
	}
	t.Logf("%d blocked spells in %v → %d notifications, all shown", len(blocked), blocked[len(blocked)-1].Sub(blocked[0]).Round(time.Millisecond), len(notes))
}

// `wrap --label` names the pane in its toasts, ahead of the project: the
// toast says nothing of the pane it came from, so agents in one project
// are told apart only by it (herdr-pi open labels its panes this way).
func TestWrapLabelNamesThePaneInItsToasts(t *testing.T) {
	dir := t.TempDir()
	h := herdrtest.Start(t, herdrtest.Options{Delivery: "herdr"})
	env := append(withoutHerdr(os.Environ()), "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir, shownAsPi(t))
	env = append(env, h.Env()...)
	r, err := startOuter(outerOptions{Env: env, Argv: []string{"herdr-pi", "wrap", "--label", "fx-retry #2 fixer", "--", "fakeagent", agentScript(t,
		"print ready\\r\\n", "run herdr-pi waiting start --source hook --id x", "sleep 1500ms")}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v", status, err)
	}
	notes := h.Notifications()
	if len(notes) != 1 || notes[0].Title != "Pi needs your input" || !strings.HasPrefix(notes[0].Body, "fx-retry #2 fixer · ") {
		t.Fatalf("notifications %+v, want one whose body starts with the label", notes)
	}
}

// A command that is not Pi, its screen read with Pi's manifest for want of
// its own, is named by its own name everywhere the person sees it: Herdr's
// pane and the toast. A toast saying "Pi needs your input" would send them
// looking for a Pi that is not there.
func TestWrapNamesACommandThatIsNotPiInItsToasts(t *testing.T) {
	dir := t.TempDir()
	h := herdrtest.Start(t, herdrtest.Options{Delivery: "herdr"})
	env := append(withoutHerdr(os.Environ()), "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir)
	env = append(env, h.Env()...)
	r, err := startOuter(outerOptions{Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", agentScript(t,
		"print ready\\r\\n", "run herdr-pi waiting start --source hook --id x", "sleep 1500ms")}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v", status, err)
	}
	reports := h.Reports(h.PaneID())
	if len(reports) == 0 || reports[len(reports)-1].Agent != "fakeagent" {
		t.Fatalf("reports %+v, want them made as fakeagent", reports)
	}
	notes := h.Notifications()
	if len(notes) != 1 || notes[0].Title != "Fakeagent needs your input" {
		t.Fatalf("notifications %+v, want one titled by the command", notes)
	}
}

// A channel that fails is seen in `herdr-pi status`, not only in the log,
// with what to change: here an ntfy server refuses the token (as ntfy.sh
// answers) and Herdr keeps its toasts off (its default). Both show in the
// text and in --json, which still matches its schema; the pane's state
// went on being reported meanwhile.
func TestStatusShowsAFailingNotificationChannel(t *testing.T) {
	schema := docSchema(t, "status")
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"code":40101,"http":401,"error":"unauthorized","link":"https://ntfy.sh/docs/publish/#authentication"}`+"\n")
	}))
	t.Cleanup(ntfy.Close)
	dir, err := os.MkdirTemp("/tmp", "hpnt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	config := filepath.Join(dir, "config.toml")
	toml := "[notify.ntfy]\nenabled = true\nserver = \"" + ntfy.URL + "\"\ntopic = \"builds\"\ntoken = \"tk_wrong\"\n"
	if err := os.WriteFile(config, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	h := herdrtest.Start(t) // toasts off, as Herdr's default
	env := append(withoutHerdr(os.Environ()), "HERDR_PI_CONFIG="+config, "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir)
	env = append(env, h.Env()...)
	r, err := startOuter(outerOptions{Keep: true, Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", agentScript(t,
		"print ready\\r\\n", "run herdr-pi waiting start --source deploy --id 1", "readline")}})
	if err != nil {
		t.Fatal(err)
	}
	finished := false
	t.Cleanup(func() {
		if !finished {
			r.wait(0)
		}
	})
	type channel struct {
		Channel      string
		Sent, Failed int
		Last, Hint   string
		Failing      bool
	}
	var st struct {
		State         string
		Notifications []channel
	}
	var out []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		var code int
		out, code = herdrPi(t, env, "status", "--json")
		st.Notifications = nil
		if code == 0 {
			if err := json.Unmarshal(out, &st); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(st.Notifications) == 2 && st.Notifications[0].Sent > 0 && st.Notifications[1].Failed > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed both channels' outcome: exit %d\n%s", code, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	validateJSON(t, schema, out)
	herdr, push := st.Notifications[0], st.Notifications[1]
	if st.State != "blocked" || herdr.Channel != "herdr" || herdr.Last != "disabled" || herdr.Failing || !strings.Contains(herdr.Hint, "[ui.toast] delivery") {
		t.Errorf("the Herdr channel:\n%s", out)
	}
	if push.Channel != "ntfy" || !push.Failing || push.Sent != 0 || push.Last != "http 401: unauthorized" || !strings.Contains(push.Hint, "[notify.ntfy] token") ||
		strings.Contains(string(out), "tk_wrong") {
		t.Errorf("the ntfy channel:\n%s", out)
	}
	plain, _ := herdrPi(t, env, "status")
	for _, want := range []string{"notify   herdr: not shown, 1 sent, last disabled (Herdr's toasts are off", "ntfy: failing, 0 sent, 1 failed, last http 401: unauthorized (the server refused access"} {
		if !strings.Contains(string(plain), want) {
			t.Errorf("status lacks %q:\n%s", want, plain)
		}
	}
	if _, err := r.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	code, err := r.wait(15 * time.Second)
	finished = true
	if err != nil || code != 0 {
		t.Fatalf("wrap: exit %d, %v", code, err)
	}
}

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff/store/storetest"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// These tests run `herdr-pi open` as a process against stores the real
// workflow engine wrote (storetest.MakeReal: Pi 1.6.0 owners, the engine's
// embedded Pi 0.84 writing the agents' transcripts), in a fake Herdr whose
// panes are real shells under tmux: the command file runs there, and so do
// `herdr-pi wrap` and a real Pi 1.6.0 on a fork of the attempt.

// openRig is the world `herdr-pi open` runs in: the Pi set-up that owns the
// store, the private directories, and the environment of the person.
type openRig struct {
	hp      string
	agent   *pitest.Agent
	private string // XDG_RUNTIME_DIR, XDG_STATE_HOME
	config  string // HERDR_PI_CONFIG: [open] pi names Pi 1.6.0
	// llm is the fake model the store's Pis ask, when the test has it.
	llm *fakellm.Server
}

// newOpenRig prepares the rig for the store of agent. A fake's panes take
// the test process's environment when the fake starts (as Herdr's panes
// take Herdr's), so the person's environment is set here, before any fake:
// everything of the Pi set-up except PATH (no Node 24 on it) and
// PI_CODING_AGENT_DIR, which reach the pane's Pi only because open carries
// them.
func newOpenRig(t *testing.T, agent *pitest.Agent) *openRig {
	t.Helper()
	r := &openRig{hp: herdrPiOnPath(t), agent: agent}
	var err error
	// Short: the wrapper's control sockets live under XDG_RUNTIME_DIR.
	if r.private, err = os.MkdirTemp("", "hpo"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(r.private) })
	for _, kv := range agent.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k != "PATH" && k != "PI_CODING_AGENT_DIR" && k != "TMPDIR" {
			t.Setenv(k, v)
		}
	}
	t.Setenv("PI_CODING_AGENT_DIR", "")
	os.Unsetenv("PI_CODING_AGENT_DIR")
	t.Setenv("XDG_RUNTIME_DIR", r.private)
	t.Setenv("XDG_STATE_HOME", r.private)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(r.private, "config"))
	r.config = filepath.Join(r.private, "config.toml")
	writeFile(t, r.config, "[open]\npi = "+strconvQuote(agent.Pi.Bin)+"\n")
	return r
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// emptyConfig is a config file that says nothing, so [open] pi is unset
// (a file HERDR_PI_CONFIG names must exist: a missing one is reported).
func emptyConfig(t *testing.T, r *openRig) string {
	path := filepath.Join(r.private, "empty.toml")
	writeFile(t, path, "")
	return path
}

// herdr starts a fake Herdr with real panes for one test; the caller's
// pane (w1:p1) is cols×rows.
func (r *openRig) herdr(t *testing.T, cols, rows int) *herdrtest.Server {
	t.Helper()
	return r.herdrWith(t, herdrtest.Options{RealPanes: &herdrtest.RealPanes{Cols: cols, Rows: rows}, NoEventPacing: true})
}

// herdrWith starts a fake Herdr of opts for one test, failing it on any
// violation of the contract.
func (r *openRig) herdrWith(t *testing.T, opts herdrtest.Options) *herdrtest.Server {
	t.Helper()
	s := herdrtest.Start(t, opts)
	t.Cleanup(func() {
		if v := s.FatalViolations(); len(v) > 0 {
			t.Errorf("fake Herdr: %s", strings.Join(v, "\n"))
		}
	})
	return s
}

// env is open's environment: the person's Pi set-up (PATH with Node 24),
// the private directories and s's pane.
func (r *openRig) env(s *herdrtest.Server) []string {
	env := r.agent.With("XDG_RUNTIME_DIR="+r.private, "XDG_STATE_HOME="+r.private,
		"XDG_CONFIG_HOME="+filepath.Join(r.private, "config"), "HERDR_PI_CONFIG="+r.config, "HERDR_PI_LOG=debug")
	if s != nil {
		env = append(env, s.Env()...)
	}
	return env
}

type openResult struct {
	stdout, stderr string
	code           int
}

// open runs `herdr-pi open args…` in the project and waits for it.
func (r *openRig) open(t *testing.T, s *herdrtest.Server, args ...string) openResult {
	t.Helper()
	return r.start(t, s, nil, args...).wait(t)
}

// runningOpen is a `herdr-pi open` started in the background.
type runningOpen struct {
	cmd       *exec.Cmd
	out, errb syncBuffer
	done      chan struct{}
	err       error
	cancel    context.CancelFunc
}

// start starts `herdr-pi open args…` in the project with env added to
// open's own (later entries win).
func (r *openRig) start(t *testing.T, s *herdrtest.Server, env []string, args ...string) *runningOpen {
	t.Helper()
	return r.startTo(t, s, nil, env, args...)
}

// startTo is start with open's stdout going to stdout (ro.out stays
// empty); nil is ro.out.
func (r *openRig) startTo(t *testing.T, s *herdrtest.Server, stdout *os.File, env []string, args ...string) *runningOpen {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	ro := &runningOpen{done: make(chan struct{}), cancel: cancel}
	ro.cmd = exec.CommandContext(ctx, r.hp, append([]string{"open"}, args...)...)
	ro.cmd.Env, ro.cmd.Dir = append(r.env(s), env...), r.agent.Project
	ro.cmd.Stdout, ro.cmd.Stderr = &ro.out, &ro.errb
	if stdout != nil {
		ro.cmd.Stdout = stdout
	}
	if err := ro.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { ro.err = ro.cmd.Wait(); close(ro.done) }()
	t.Cleanup(func() { cancel(); <-ro.done })
	return ro
}

// syncBuffer is a buffer a test may read while a process writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitOutput waits until open's output holds want.
func (ro *runningOpen) waitOutput(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(ro.out.String(), want); time.Sleep(20 * time.Millisecond) {
		ro.running(t)
		if time.Now().After(deadline) {
			t.Fatalf("open never printed %q:\n%s%s", want, ro.out.String(), ro.errb.String())
		}
	}
}

// wait waits for open to end and returns what it said.
func (ro *runningOpen) wait(t *testing.T) openResult {
	t.Helper()
	<-ro.done
	ro.cancel()
	res := openResult{stdout: ro.out.String(), stderr: ro.errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(ro.err, &ee) && ee.ExitCode() >= 0:
		res.code = ee.ExitCode()
	case ro.err != nil:
		t.Fatalf("herdr-pi open: %v\n%s%s", ro.err, res.stdout, res.stderr)
	}
	return res
}

// running fails the test if open has ended.
func (ro *runningOpen) running(t *testing.T) {
	t.Helper()
	select {
	case <-ro.done:
		t.Fatalf("herdr-pi open ended early: %v\n%s%s", ro.err, ro.out.String(), ro.errb.String())
	default:
	}
}

// openReport is the part of `open --json` the tests read.
type openReport struct {
	Format      string   `json:"format"`
	Run         string   `json:"run"`
	Attempt     string   `json:"attempt"`
	Session     string   `json:"session_file"`
	Fork        string   `json:"fork"`
	Model       string   `json:"model"`
	OwnerGone   bool     `json:"owner_gone"`
	Mode        string   `json:"mode"`
	PaneID      string   `json:"pane_id"`
	TabID       string   `json:"tab_id"`
	WorkspaceID string   `json:"workspace_id"`
	Direction   string   `json:"direction"`
	Reused      bool     `json:"reused"`
	Created     []string `json:"created"`
	Command     []string `json:"command"`
	Env         []string `json:"env"`
	Cwd         string   `json:"cwd"`
	Ended       string   `json:"ended"`
}

// openJSON runs `herdr-pi open --json args…` and decodes its report; it
// fails the test unless open succeeded.
func (r *openRig) openJSON(t *testing.T, s *herdrtest.Server, args ...string) openReport {
	t.Helper()
	res := r.open(t, s, append(args, "--json")...)
	if res.code != 0 {
		t.Fatalf("herdr-pi open %s: exit %d\n%s%s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
	}
	var rep openReport
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("open --json printed %q: %v", res.stdout, err)
	}
	return rep
}

// fileState is a file's bytes and modification time.
type fileState struct {
	data  []byte
	mtime time.Time
}

// transcripts reads every agent transcript of the store (the flat files
// under the agent's sessions dir), to prove inspection changes none.
func (r *openRig) transcripts(t *testing.T) map[string]fileState {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(r.agent.AgentDir, "sessions", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no agent transcripts in %s (%v)", r.agent.AgentDir, err)
	}
	out := map[string]fileState{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = fileState{data, fi.ModTime()}
	}
	return out
}

func sameTranscripts(t *testing.T, when string, before, after map[string]fileState) {
	t.Helper()
	for f, b := range before {
		a, ok := after[f]
		switch {
		case !ok:
			t.Errorf("%s: %s is gone", when, f)
		case !bytes.Equal(a.data, b.data):
			t.Errorf("%s: %s changed: %d bytes, was %d", when, f, len(a.data), len(b.data))
		case !a.mtime.Equal(b.mtime):
			t.Errorf("%s: %s has a new mtime %v, was %v", when, f, a.mtime, b.mtime)
		}
	}
	for f := range after {
		if _, ok := before[f]; !ok {
			t.Errorf("%s: a new transcript %s among the agents' (forks belong under the project's session dir)", when, f)
		}
	}
}

// entry is a line of a Pi session file.
type entry struct {
	Type          string `json:"type"`
	ParentSession string `json:"parentSession"`
	Cwd           string `json:"cwd"`
	Message       *struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

func readSession(t *testing.T, path string) []entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v in %q", path, err, sc.Text())
		}
		out = append(out, e)
	}
	return out
}

// messages are the session's messages as "role: text…" (text parts only).
func messages(es []entry) []string {
	var out []string
	for _, e := range es {
		if e.Type != "message" || e.Message == nil {
			continue
		}
		var text string
		if json.Unmarshal(e.Message.Content, &text) != nil {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			json.Unmarshal(e.Message.Content, &parts)
			for _, p := range parts {
				text += p.Text
			}
		}
		out = append(out, e.Message.Role+": "+text)
	}
	return out
}

// checkFork reads the fork the pane's Pi writes: its header names the
// original as its parent and it holds every message of the original.
func checkFork(t *testing.T, rep openReport) []entry {
	t.Helper()
	if rep.Fork == "" || rep.Fork == rep.Session {
		t.Fatalf("open reported the fork %q (session %s)", rep.Fork, rep.Session)
	}
	var fork []entry
	// Pi writes the fork's file when it starts; give a loaded box a moment.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(rep.Fork); err == nil {
			fork = readSession(t, rep.Fork)
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the fork %s was never written: %v", rep.Fork, err)
		}
	}
	if len(fork) == 0 || fork[0].Type != "session" || fork[0].ParentSession != rep.Session {
		t.Fatalf("the fork's header %+v does not name %s as its parent", fork[0], rep.Session)
	}
	want := messages(readSession(t, rep.Session))
	got := messages(fork)
	if len(want) == 0 {
		t.Fatalf("the original %s holds no messages", rep.Session)
	}
	for _, m := range want {
		if !slices.Contains(got, m) {
			t.Fatalf("the fork lacks the attempt's message %.120q; it holds %q", m, got)
		}
	}
	return fork
}

// states lists the accepted agent reports of a pane ("idle", "working").
func paneStates(s *herdrtest.Server, pane string) []string {
	var out []string
	for _, c := range s.Reports(pane) {
		if c.Accepted && c.State != "unknown" {
			out = append(out, c.State)
		}
	}
	return out
}

func waitStates(t *testing.T, s *herdrtest.Server, pane, what string, want ...string) {
	t.Helper()
	if !s.Await(60*time.Second, func() bool { return slices.Equal(paneStates(s, pane), want) }) {
		screen, _ := s.Screen(pane)
		t.Fatalf("%s: pane %s reported %q, want %q; it shows:\n%s", what, pane, paneStates(s, pane), want, screen)
	}
}

// prompt types a line into the pane's Pi, as the person would.
func prompt(t *testing.T, s *herdrtest.Server, pane, text string) {
	t.Helper()
	c := herdr.NewClient(s.SocketPath())
	if err := c.PaneSendInput(t.Context(), pane, text, "Enter"); err != nil {
		t.Fatal(err)
	}
}

// waitPiReady waits for Pi's editor in the pane (two full-width rules) and
// for the end of Pi's startup, which its wrapper learns from the probe's
// session_start: a line typed earlier may be dropped ("Startup is still
// in progress"), which a loaded machine makes likely. private is the
// XDG_RUNTIME_DIR the pane's wrapper runs with.
func waitPiReady(t *testing.T, private string, s *herdrtest.Server, pane string) {
	t.Helper()
	var screen string
	if !s.Await(2*time.Minute, func() bool {
		screen, _ = s.Screen(pane)
		return piRules(screen) >= 2
	}) {
		t.Fatalf("Pi's editor never showed in pane %s:\n%s", pane, screen)
	}
	if !s.Await(2*time.Minute, func() bool { return paneSession(t, private, s, pane) != "" }) {
		screen, _ = s.Screen(pane)
		t.Fatalf("Pi in pane %s never said its startup was over (session_start):\n%s", pane, screen)
	}
}

// piRules counts the lines of a screen that are one of the rules around
// Pi's editor: nothing but "─", the pane's width (20 columns at least,
// so a short line of dashes is not taken for one). A fixed width misses
// them in a narrow pane: the second split of a 200-column tab is 49
// columns wide, and a wait for rules of 50 there ended only when the
// other pane closed and this one grew.
func piRules(screen string) int {
	n := 0
	for _, line := range strings.Split(screen, "\n") {
		line = strings.TrimRight(line, " ")
		if utf8.RuneCountInString(line) >= 20 && strings.Trim(line, "─") == "" {
			n++
		}
	}
	return n
}

// paneSession is the session file the wrapper in pane says its Pi writes
// ("" until the probe's session_start, or while it cannot be asked).
func paneSession(t *testing.T, private string, s *herdrtest.Server, pane string) string {
	base := filepath.Join(private, fmt.Sprintf("herdr-pi-%d", os.Getuid()))
	ep, err := control.PaneRegistry(base).Lookup(control.PaneKey(s.SocketPath(), pane))
	if err != nil {
		return ""
	}
	c, err := control.Dial(t.Context(), ep.Socket, ep.Token)
	if err != nil {
		return ""
	}
	defer c.Close()
	st, err := c.Status(t.Context())
	if err != nil {
		return ""
	}
	return st.SessionFile
}

// inspect opens an attempt and proves the acceptance: a real Pi on a fork
// in a real pane, the fork holds the history, the pane's state reaches
// Herdr, and a prompt answered by the fake model lands in the fork while
// no transcript of the store changes.
func (r *openRig) inspect(t *testing.T, run, attempt string, extra ...string) openReport {
	t.Helper()
	s := r.herdr(t, 0, 0)
	before := r.transcripts(t)
	rep := r.openJSON(t, s, append([]string{run, attempt}, extra...)...)
	if rep.Format != "herdr-pi.open/1" || rep.Run != run || rep.PaneID == "" || rep.Mode != "split" ||
		!slices.Equal(rep.Created, []string{"pane " + rep.PaneID}) || rep.Model != "fake/fake-model:off" {
		t.Fatalf("open --json: %+v", rep)
	}
	if _, ok := before[rep.Session]; !ok {
		t.Fatalf("open names the session %s, not one of the agents' transcripts", rep.Session)
	}
	// The pane's title names it in its notifications too (wrap --label).
	label := ""
	if len(rep.Command) > 5 && strings.HasSuffix(rep.Command[5], " (inspect)") {
		label = rep.Command[5]
	}
	wantArgv := []string{r.hp, "wrap", "--agent", "pi", "--label", label, "--no-resume", "--", r.agent.Pi.Bin, "--fork", rep.Session, "--tools", "read,grep,find,ls", "--model", "fake/fake-model:off"}
	if !slices.Equal(rep.Command, wantArgv) {
		t.Fatalf("command %q\nwant    %q", rep.Command, wantArgv)
	}
	checkFork(t, rep)
	waitStates(t, s, rep.PaneID, "the inspection's Pi at rest", "idle")
	sameTranscripts(t, "after open", before, r.transcripts(t))

	waitPiReady(t, r.private, s, rep.PaneID)
	const question = storetest.InspectMarker + " what did you do?"
	prompt(t, s, rep.PaneID, question)
	waitStates(t, s, rep.PaneID, "after a prompt", "idle", "working", "idle")
	s.WaitForText(t, rep.PaneID, "nothing else", 30*time.Second)
	got := messages(readSession(t, rep.Fork))
	if i := slices.Index(got, "user: "+question); i < 0 || i == len(got)-1 || got[len(got)-1] != "assistant: "+storetest.ReplyInspected {
		t.Fatalf("the fork after a prompt: %q", got)
	}
	sameTranscripts(t, "after a prompt in the inspection", before, r.transcripts(t))
	// Seed: completed-session opening is inspection only, with a
	// restricted tool set; and herdr-pi registers no model-facing tool.
	// What the inspection's Pi offers its model is the proof, whatever
	// the command line says.
	if r.llm != nil {
		i := slices.IndexFunc(r.llm.Requests(), func(q fakellm.Request) bool { return q.LastUser() == question })
		if i < 0 {
			t.Fatal("the inspection's prompt never reached the model")
		}
		if got := requestTools(t, r.llm.Requests()[i].Body); !slices.Equal(got, []string{"find", "grep", "ls", "read"}) {
			t.Fatalf("the inspection's Pi offers its model the tools %q, want only find, grep, ls, read", got)
		}
	}
	return rep
}

// requestTools are the names of the tools a model request offers, sorted.
func requestTools(t *testing.T, body []byte) []string {
	t.Helper()
	var b struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("request body: %v", err)
	}
	var names []string
	for _, x := range b.Tools {
		names = append(names, x.Function.Name)
	}
	slices.Sort(names)
	return names
}

// TestOpenRealStore opens attempts of a store the real engine wrote: a
// completed attempt, a retried agent's first attempt, an attempt of a
// failed run, and one whose owner Pi was SIGKILLed mid-attempt — and,
// while that owner still ran, refuses its live attempt unless --inspect.
func TestOpenRealStore(t *testing.T) {
	var r *openRig
	fx := storetest.MakeReal(t, func(o *storetest.Owner) {
		r = newOpenRig(t, o.Env.Agent)
		r.llm = o.Env.Model
		t.Run("live attempt", func(t *testing.T) { openLive(t, r, o) })
	})
	t.Logf("the engine wrote the store in %v", fx.Took.Round(time.Millisecond))

	t.Run("completed", func(t *testing.T) { r.inspect(t, fx.Completed, "api") })
	t.Run("retried #1", func(t *testing.T) {
		rep := r.inspect(t, fx.Retried, "fixer#1")
		if rep.Attempt != "fixer#1" {
			t.Fatalf("opened %s", rep.Attempt)
		}
	})
	t.Run("failed run", func(t *testing.T) { r.inspect(t, fx.Failed, "lint") })
	t.Run("killed owner", func(t *testing.T) {
		s := r.herdr(t, 0, 0)
		res := r.open(t, s, fx.Killed[:8], "api")
		if res.code != 0 || !strings.Contains(res.stderr, "its owner Pi is gone") {
			t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		s.Close()
		rep := r.inspect(t, fx.Killed, "api")
		if !rep.OwnerGone {
			t.Fatalf("open --json does not say the owner is gone: %+v", rep)
		}
	})
	// The pane's wrapper tells open the fork through the pane registry in
	// herdr-pi's runtime directory: it must look where open looks, even
	// when Herdr's panes start with another XDG_RUNTIME_DIR.
	t.Run("pane with another runtime dir", func(t *testing.T) {
		other, err := os.MkdirTemp("", "hpx")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(other) })
		t.Setenv("XDG_RUNTIME_DIR", other)
		s := r.herdr(t, 0, 0)
		rep := r.openJSON(t, s, fx.Completed, "api")
		checkFork(t, rep)
		waitStates(t, s, rep.PaneID, "the inspection", "idle")
	})
	// Without [open] pi, open runs the "pi" on the person's PATH.
	t.Run("pi from PATH", func(t *testing.T) {
		s := r.herdr(t, 0, 0)
		bin := filepath.Dir(r.agent.Pi.Bin)
		path := r.agent.Pi.NodeDir + ":" + bin + ":" + os.Getenv("PATH")
		ro := r.start(t, s, []string{"HERDR_PI_CONFIG=" + emptyConfig(t, r), "PATH=" + path},
			fx.Completed, "api", "--json")
		res := ro.wait(t)
		var rep openReport
		// The agent's command comes after wrap's "--".
		if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || res.code != 0 || !slices.Contains(rep.Command, "--") || rep.Command[slices.Index(rep.Command, "--")+1] != filepath.Join(bin, "pi") {
			t.Fatalf("exit %d, report %+v (%v)\n%s%s", res.code, rep, err, res.stdout, res.stderr)
		}
		checkFork(t, rep)
		waitStates(t, s, rep.PaneID, "the inspection", "idle")
	})
	// Herdr 0.9 restores an agent after a restart with the command its
	// reports carry: a pane herdr-pi opened gives none (wrap --no-resume).
	// Restored, an inspection would lose its read-only tools, and a
	// handed-off attempt would get a second Pi on its owner's file.
	t.Run("no restore on protocol 22", func(t *testing.T) {
		s := r.herdrWith(t, herdrtest.Options{Protocol: herdrtest.Protocol22, RealPanes: &herdrtest.RealPanes{}, NoEventPacing: true})
		rep := r.openJSON(t, s, fx.Completed, "api")
		checkFork(t, rep)
		waitStates(t, s, rep.PaneID, "the inspection's Pi at rest", "idle")
		waitPiReady(t, r.private, s, rep.PaneID)
		// Reports after Pi named its file: each would carry the command.
		prompt(t, s, rep.PaneID, storetest.InspectMarker+" what did you do?")
		waitStates(t, s, rep.PaneID, "after a prompt", "idle", "working", "idle")
		for _, c := range s.Reports(rep.PaneID) {
			if c.ResumeArgv != nil {
				t.Fatalf("pane %s offered Herdr a command to restore it with: %q", rep.PaneID, c.ResumeArgv)
			}
		}
	})
	t.Run("close", func(t *testing.T) { closeInspection(t, r, fx.Completed, "api") })
	t.Run("upstream cases", func(t *testing.T) { openUpstreamCases(t, r, fx) })
	t.Run("wait", func(t *testing.T) { openWait(t, r, fx.Completed, "docs") })
	t.Run("interrupted early", func(t *testing.T) { openInterruptedEarly(t, r, fx.Completed, "docs") })
}

// closeInspection: `herdr-pi close <run>` closes the pane of an inspection
// open started (its Pi still running there), once, and then has nothing
// left for the run. Its own runtime directory keeps the other subtests'
// ledger records out of it.
func closeInspection(t *testing.T, r *openRig, run, attempt string) {
	own, err := os.MkdirTemp("", "hpc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(own) })
	env := []string{"XDG_RUNTIME_DIR=" + own}
	s := r.herdr(t, 0, 0)
	res := r.start(t, s, env, run, attempt, "--json").wait(t)
	var rep openReport
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || res.code != 0 {
		t.Fatalf("open: exit %d (%v)\n%s%s", res.code, err, res.stdout, res.stderr)
	}
	waitStates(t, s, rep.PaneID, "the inspection", "idle")
	closeRun := func(flags ...string) (string, int) {
		cmd := exec.Command(r.hp, append([]string{"close", run[:8]}, flags...)...)
		cmd.Env, cmd.Dir = append(r.env(s), env...), r.agent.Project
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		t.Logf("close: %v\n%s", err, errb.String())
		return out.String(), cmd.ProcessState.ExitCode()
	}
	s.ClearRecords()
	out, code := closeRun("--json")
	var got struct {
		Closed []struct{ Kind, ID, How string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || len(got.Closed) != 1 ||
		got.Closed[0].Kind != "pane" || got.Closed[0].ID != rep.PaneID || got.Closed[0].How != "closed" {
		t.Fatalf("close: exit %d (%v), want pane %s closed\n%s", code, err, rep.PaneID, out)
	}
	if ex := s.WaitExited(t, rep.PaneID, 10*time.Second); !ex.Closed {
		t.Fatalf("the inspection's pane ended %+v, not closed", ex)
	}
	// The pane's wrapper talks to Herdr too; of closes, there was one.
	var closes []string
	for _, m := range s.Methods() {
		if strings.HasSuffix(m, ".close") {
			closes = append(closes, m)
		}
	}
	if !slices.Equal(closes, []string{"pane.close"}) {
		t.Fatalf("close calls %q", closes)
	}
	if out, code := closeRun(); code != 0 || !strings.Contains(out, "nothing herdr-pi opened for run") {
		t.Fatalf("close again: exit %d\n%s", code, out)
	}
}

// openLive runs while the owner of the killed workflow is alive: its
// attempt is live, but its owner Pi does not run under herdr-pi wrap, so
// nothing can hand it off: open says so without a single Herdr call, names
// the fix (herdr-pi wrap pi) and --inspect, which opens a fork of what is
// there so far.
func openLive(t *testing.T, r *openRig, o *storetest.Owner) {
	s := r.herdr(t, 0, 0)
	res := r.open(t, s, o.RunID, "api")
	if res.code != 1 || !strings.Contains(res.stderr, "is live") || !strings.Contains(res.stderr, "does not run under herdr-pi wrap") ||
		!strings.Contains(res.stderr, "'herdr-pi wrap pi'") || !strings.Contains(res.stderr, "--inspect") {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if m := s.Methods(); len(m) != 0 {
		t.Fatalf("open refused but called Herdr: %q", m)
	}
	before := r.transcripts(t)
	rep := r.openJSON(t, s, o.RunID, "api", "--inspect")
	checkFork(t, rep)
	waitStates(t, s, rep.PaneID, "the live attempt's inspection", "idle")
	sameTranscripts(t, "after inspecting a live attempt", before, r.transcripts(t))
	// Its Pi goes before the owner does.
	s.Close()
}

// newPane waits until open typed into a new pane and returns that pane.
func newPane(t *testing.T, s *herdrtest.Server, ro *runningOpen) string {
	t.Helper()
	var in []herdrtest.InputCall
	if !s.Await(60*time.Second, func() bool { in = s.Inputs(); return len(in) > 0 }) {
		ro.running(t)
		t.Fatalf("open never typed into a pane; calls %q", s.Methods())
	}
	return in[0].PaneID
}

// openWait proves --wait: open stays while the inspection runs and says
// how the pane ended — "exited" when the person quits Pi, "closed" when the
// pane is closed; Ctrl-C to open closes the pane it opened.
func openWait(t *testing.T, r *openRig, run, attempt string) {
	setup := func(t *testing.T, args ...string) (*herdrtest.Server, *runningOpen, string) {
		s := r.herdr(t, 0, 0)
		ro := r.start(t, s, nil, append([]string{run, attempt, "--wait"}, args...)...)
		pane := newPane(t, s, ro)
		waitStates(t, s, pane, "the inspection at rest", "idle")
		waitPiReady(t, r.private, s, pane)
		ro.running(t)
		return s, ro, pane
	}
	// The person may quit before open has learnt the fork: the report
	// then has none, which is why it is not asked for here.
	t.Run("exited", func(t *testing.T) {
		s, ro, pane := setup(t, "--json")
		prompt(t, s, pane, "/quit")
		res := ro.wait(t)
		var rep openReport
		if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || res.code != 0 || rep.Ended != "exited" || rep.PaneID != pane {
			t.Fatalf("exit %d, report %+v (%v)\n%s%s", res.code, rep, err, res.stdout, res.stderr)
		}
		if ex := s.WaitExited(t, pane, 10*time.Second); ex.Closed || ex.Code != 0 {
			t.Fatalf("the pane ended %+v", ex)
		}
	})
	t.Run("closed", func(t *testing.T) {
		s, ro, pane := setup(t)
		ro.waitOutput(t, "fork: ")
		if err := herdr.NewClient(s.SocketPath()).PaneClose(t.Context(), pane); err != nil {
			t.Fatal(err)
		}
		res := ro.wait(t)
		if res.code != 0 || !strings.HasSuffix(res.stdout, "pane "+pane+" closed\n") || !strings.Contains(res.stdout, "opened "+attempt) {
			t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		s, ro, pane := setup(t)
		ro.waitOutput(t, "fork: ")
		interrupt(t, s, ro, pane)
	})
}

// interrupt sends open SIGINT (Ctrl-C) and proves it closed the pane it
// opened and said so.
func interrupt(t *testing.T, s *herdrtest.Server, ro *runningOpen, pane string) {
	t.Helper()
	if err := ro.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	res := ro.wait(t)
	if res.code != 130 || !strings.Contains(res.stderr, "interrupted; closed pane "+pane) {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if ex := s.WaitExited(t, pane, 10*time.Second); !ex.Closed {
		t.Fatalf("the pane ended %+v, not closed", ex)
	}
}

// fakePi writes a shell script standing in for Pi and a config naming it
// in [open] pi; it returns the config's path.
func (r *openRig) fakePi(t *testing.T, name, script string) string {
	t.Helper()
	bin := filepath.Join(r.private, name)
	writeFile(t, bin, "#!/bin/sh\n"+script+"\n")
	if err := os.Chmod(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(r.private, name+".toml")
	writeFile(t, cfg, "[open]\npi = "+strconvQuote(bin)+"\n")
	return cfg
}

// openInterruptedEarly: Ctrl-C while open still waits to learn the fork
// (its Pi has not said which file it writes) closes the pane too, and open
// says it was interrupted, with or without --wait. The pane's "Pi" here
// never starts a session, so open is sure to be waiting.
func openInterruptedEarly(t *testing.T, r *openRig, run, attempt string) {
	cfg := r.fakePi(t, "silent-pi", "exec sleep 600")
	for _, args := range [][]string{{run, attempt}, {run, attempt, "--wait"}} {
		t.Run(strings.TrimPrefix(strings.Join(append([]string{"no wait"}, args[2:]...), " "), "no wait "), func(t *testing.T) {
			s := r.herdr(t, 0, 0)
			ro := r.start(t, s, []string{"HERDR_PI_CONFIG=" + cfg}, args...)
			pane := newPane(t, s, ro)
			// The wrapper reports once it runs: the command file has been
			// started and open waits for the session file.
			if !s.Await(60*time.Second, func() bool { return len(s.Reports(pane)) > 0 }) {
				t.Fatalf("the pane's wrapper never reported; calls %q", s.Methods())
			}
			ro.running(t)
			interrupt(t, s, ro, pane)
		})
	}
}

// openCalls are open's own requests among everything the fake saw (the
// pane's wrapper reports too, and open follows Herdr's events).
func openCalls(s *herdrtest.Server) []herdrtest.Request {
	var out []herdrtest.Request
	for _, q := range s.Requests() {
		if strings.HasPrefix(q.Method, "workspace.") || strings.HasPrefix(q.Method, "tab.") ||
			slices.Contains([]string{"pane.layout", "pane.split", "pane.report_metadata", "pane.send_input", "pane.list", "pane.close"}, q.Method) {
			out = append(out, q)
		}
	}
	return out
}

func methodsOf(qs []herdrtest.Request) string {
	var m []string
	for _, q := range qs {
		m = append(m, q.Method)
	}
	return strings.Join(m, " ")
}

func paramsOf(t *testing.T, q herdrtest.Request) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(q.Params, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// forgeRun copies run from into a new run id in the same session, with
// its state changed by edit: the shapes the engine writes, with one fact
// altered (a removed worktree, a transcript gone).
func forgeRun(t *testing.T, home, from, id string, edit func(st map[string]any)) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(home, ".pi", "workflows", "projects", "*", "sessions", "*", "runs", from))
	if len(dirs) != 1 {
		t.Fatalf("run %s: %q", from, dirs)
	}
	dst := filepath.Join(filepath.Dir(dirs[0]), id)
	if err := os.CopyFS(dst, os.DirFS(dirs[0])); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dst, "state.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	st["id"] = id
	edit(st)
	if data, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// eachAttempt calls f with every attempt record of a state.json.
func eachAttempt(st map[string]any, f func(at map[string]any)) {
	for _, ag := range st["agents"].([]any) {
		for _, at := range ag.(map[string]any)["attemptDetails"].([]any) {
			f(at.(map[string]any))
		}
	}
}

// refused runs open and proves it failed with a message holding each of
// want, without a single Herdr call.
func (r *openRig) refused(t *testing.T, env []string, args []string, want ...string) {
	t.Helper()
	s := r.herdr(t, 0, 0)
	res := r.start(t, s, env, args...).wait(t)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", res.code, res.stdout, res.stderr)
	}
	for _, w := range want {
		if !strings.Contains(res.stderr, w) {
			t.Fatalf("the error lacks %q:\n%s", w, res.stderr)
		}
	}
	if m := s.Methods(); len(m) != 0 {
		t.Fatalf("open failed but called Herdr: %q", m)
	}
}

// openUpstreamCases restates the upstream Herdr extension's cases
// (workflows-handoff.md §10.1, §10.3) for `herdr-pi open`.
func openUpstreamCases(t *testing.T, r *openRig, fx *storetest.Real) {
	project := r.agent.Project
	t.Run("split", func(t *testing.T) {
		for _, c := range []struct {
			name       string
			cols, rows int
			want       string
		}{{"wide", 200, 50, "right"}, {"tall", 60, 100, "down"}, {"equal", 80, 80, "down"}} {
			t.Run(c.name, func(t *testing.T) {
				s := r.herdr(t, c.cols, c.rows)
				rep := r.openJSON(t, s, fx.Completed, "api")
				calls := openCalls(s)
				if m := methodsOf(calls); m != "pane.layout pane.split pane.report_metadata pane.send_input" {
					t.Fatalf("calls %q", m)
				}
				if p := paramsOf(t, calls[0]); p["pane_id"] != s.PaneID() {
					t.Fatalf("pane.layout %v", p)
				}
				split := paramsOf(t, calls[1])
				if split["target_pane_id"] != s.PaneID() || split["direction"] != c.want || split["focus"] == true || split["cwd"] != project {
					t.Fatalf("pane.split %v, want %s without focus in %s", split, c.want, project)
				}
				// The pane is named for the attempt while Pi runs in it,
				// as the engine's own transport names its agent.
				if md := paramsOf(t, calls[2]); md["pane_id"] != rep.PaneID || md["agent"] != "pi" || md["title"] != "fx-complete #1 api (inspect)" {
					t.Fatalf("pane.report_metadata %v", md)
				}
				// Its notifications say the same (wrap --label).
				if i := slices.Index(rep.Command, "--label"); i < 0 || i+1 >= len(rep.Command) || rep.Command[i+1] != "fx-complete #1 api (inspect)" {
					t.Fatalf("the pane's command %q does not label it as Herdr shows it", rep.Command)
				}
				in := paramsOf(t, calls[3])
				text, _ := in["text"].(string)
				file, ok := strings.CutPrefix(text, "exec sh '")
				file = strings.TrimSuffix(file, "'")
				// In a run directory of open's own, under <runtime>/open.
				if in["pane_id"] != rep.PaneID || !ok || filepath.Dir(filepath.Dir(file)) != filepath.Join(r.private, fmt.Sprintf("herdr-pi-%d", os.Getuid()), "open") ||
					!strings.HasPrefix(filepath.Base(filepath.Dir(file)), "run-") ||
					len(text) > 200 || toStrings(in["keys"]) != "Enter" {
					t.Fatalf("pane.send_input %v into %s", in, rep.PaneID)
				}
				if _, err := os.Lstat(file); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the command file %s is still there: %v", file, err)
				}
				if rep.Direction != c.want {
					t.Fatalf("reported %+v", rep)
				}
				waitStates(t, s, rep.PaneID, "the inspection", "idle")
			})
		}
	})

	t.Run("fully inspectable", func(t *testing.T) {
		settings := filepath.Join(r.agent.AgentDir, "pi-extensible-workflows", "settings.json")
		writeFile(t, settings, `{"concurrency": 4, "extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}}`)
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(settings)) })
		s := r.herdr(t, 0, 0)
		first := r.openJSON(t, s, fx.Completed, "api")
		calls := openCalls(s)
		// The run has no workspace yet (the ledger names none): one is
		// opened, not looked for by its label, which every run of the
		// workflow carries.
		if m := methodsOf(calls); m != "workspace.create tab.rename tab.create pane.report_metadata pane.send_input" {
			t.Fatalf("first open: %q", m)
		}
		ws := paramsOf(t, calls[0])
		if ws["label"] != "workflow fx-complete" || ws["cwd"] != project || ws["focus"] == true {
			t.Fatalf("workspace.create %v", ws)
		}
		if p := paramsOf(t, calls[1]); p["tab_id"] != first.WorkspaceID+":t1" || p["label"] != "workflow fx-complete" {
			t.Fatalf("tab.rename %v", p)
		}
		if p := paramsOf(t, calls[2]); p["workspace_id"] != first.WorkspaceID || p["label"] != "#1 api" || p["cwd"] != project {
			t.Fatalf("tab.create %v", p)
		}
		if first.Mode != "workspace" || first.Reused || paramsOf(t, calls[4])["pane_id"] != first.PaneID {
			t.Fatalf("first open: %+v", first)
		}
		checkFork(t, first)
		waitStates(t, s, first.PaneID, "the attempt's tab", "idle")

		s.ClearRecords()
		again := r.openJSON(t, s, fx.Completed, "api")
		if m := methodsOf(openCalls(s)); m != "workspace.list tab.list pane.list" || !again.Reused ||
			again.PaneID != first.PaneID || again.TabID != first.TabID || len(again.Created) != 0 {
			t.Fatalf("second open: %q %+v", m, again)
		}
		// Waiting on the reused tab, Ctrl-C leaves it: open did not open it.
		ro := r.start(t, s, nil, fx.Completed, "api", "--wait")
		ro.waitOutput(t, "is already open in tab "+first.TabID)
		if err := ro.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if res := ro.wait(t); res.code != 130 || !strings.Contains(res.stderr, "interrupted; closed nothing: pane "+first.PaneID+" was open before and stays") ||
			!s.Pane(first.PaneID).Exists {
			t.Fatalf("exit %d, pane %+v\n%s%s", res.code, s.Pane(first.PaneID), res.stdout, res.stderr)
		}

		s.ClearRecords()
		other := r.openJSON(t, s, fx.Completed, "docs")
		calls = openCalls(s)
		if m := methodsOf(calls); m != "workspace.list tab.list tab.create pane.report_metadata pane.send_input" ||
			other.WorkspaceID != first.WorkspaceID || other.TabID == first.TabID || paramsOf(t, calls[2])["label"] != "#1 docs" {
			t.Fatalf("another attempt: %q %+v", m, other)
		}
		waitStates(t, s, other.PaneID, "the other attempt's tab", "idle")
	})

	t.Run("cwd fallback", func(t *testing.T) {
		const id = "c0ffee00-0000-4000-8000-00000000cafe"
		gone := filepath.Join(project, "worktree-removed")
		forgeRun(t, fx.Home(), fx.Completed, id, func(st map[string]any) {
			eachAttempt(st, func(at map[string]any) { at["setup"].(map[string]any)["cwd"] = gone })
		})
		s := r.herdr(t, 0, 0)
		rep := r.openJSON(t, s, id, "api")
		if rep.Cwd != project || paramsOf(t, openCalls(s)[1])["cwd"] != project {
			t.Fatalf("opened in %q, want the run's cwd %s", rep.Cwd, project)
		}
		if fork := checkFork(t, rep); fork[0].Cwd != project {
			t.Fatalf("the fork's Pi runs in %q", fork[0].Cwd)
		}
		waitStates(t, s, rep.PaneID, "the inspection", "idle")
	})

	t.Run("refusals", func(t *testing.T) {
		t.Run("no such run", func(t *testing.T) {
			r.refused(t, nil, []string{"deadbeef", "api"}, `no workflow run "deadbeef"`, "--list")
		})
		t.Run("no such attempt", func(t *testing.T) {
			r.refused(t, nil, []string{fx.Completed, "nobody"}, "api#1", "docs#1")
		})
		t.Run("session file missing", func(t *testing.T) {
			const id = "c0ffee00-0000-4000-8000-00000000f11e"
			missing := filepath.Join(r.agent.AgentDir, "sessions", "never-written.jsonl")
			forgeRun(t, fx.Home(), fx.Completed, id, func(st map[string]any) {
				eachAttempt(st, func(at map[string]any) {
					at["session"].(map[string]any)["locator"].(map[string]any)["sessionFile"] = missing
				})
			})
			r.refused(t, nil, []string{id, "api"}, missing, "does not exist")
		})
		t.Run("neither cwd exists", func(t *testing.T) {
			const id = "c0ffee00-0000-4000-8000-0000000000cd"
			forgeRun(t, fx.Home(), fx.Completed, id, func(st map[string]any) {
				st["cwd"] = "/nonexistent/run"
				eachAttempt(st, func(at map[string]any) { at["setup"].(map[string]any)["cwd"] = "/nonexistent/worktree" })
			})
			r.refused(t, nil, []string{id, "api"}, "/nonexistent/run", "/nonexistent/worktree")
		})
		t.Run("obsolete settings", func(t *testing.T) {
			settings := filepath.Join(r.agent.AgentDir, "pi-extensible-workflows", "settings.json")
			writeFile(t, settings, `{"extensions": {"herdr": {"enableFullyInspectableMode": true}}}`)
			t.Cleanup(func() { os.RemoveAll(filepath.Dir(settings)) })
			r.refused(t, nil, []string{fx.Completed, "api"}, settings, `"extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}`)
		})
		// A Pi command that names a file checks it before Herdr hears
		// anything (a bare name is looked up on PATH).
		t.Run("no such Pi", func(t *testing.T) {
			cfg := filepath.Join(r.private, "nopi.toml")
			writeFile(t, cfg, "[open]\npi = [\"/nonexistent/bin/pi\", \"--verbose\"]\n")
			r.refused(t, []string{"HERDR_PI_CONFIG=" + cfg}, []string{fx.Completed, "api"}, "/nonexistent/bin/pi", "[open] pi", cfg)
		})
		t.Run("no Pi on PATH", func(t *testing.T) {
			r.refused(t, []string{"HERDR_PI_CONFIG=" + emptyConfig(t, r), "PATH=/usr/bin:/bin"},
				[]string{fx.Completed, "api"}, `"pi" is not on your PATH`, "[open] pi")
		})
		t.Run("not in Herdr", func(t *testing.T) {
			res := r.start(t, nil, nil, fx.Completed, "api").wait(t)
			if res.code != 1 || !strings.Contains(res.stderr, "HERDR_PANE_ID") {
				t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
			}
		})
	})

	// A command that fails in the pane (here a "Pi" that cannot start)
	// is an error of open, at once: the pane is left, holding the
	// failure's words until the person presses Enter.
	t.Run("command fails in the pane", func(t *testing.T) {
		cfg := r.fakePi(t, "broken-pi", "echo 'broken-pi: cannot start' >&2\nexit 3")
		for _, wait := range []bool{false, true} {
			s := r.herdr(t, 0, 0)
			args := []string{fx.Completed, "api"}
			if wait {
				args = append(args, "--wait")
			}
			res := r.start(t, s, []string{"HERDR_PI_CONFIG=" + cfg}, args...).wait(t)
			if res.code != 1 || !strings.Contains(res.stderr, "failed in pane w1:p2") || !strings.Contains(res.stderr, "press Enter") {
				t.Fatalf("--wait %v: exit %d\n%s%s", wait, res.code, res.stdout, res.stderr)
			}
			out := s.WaitForText(t, "w1:p2", "press Enter to close this pane", 10*time.Second)
			if !strings.Contains(out, "broken-pi: cannot start") || !s.Pane("w1:p2").Exists {
				t.Fatalf("the pane shows:\n%s", out)
			}
			if left, _ := os.ReadDir(filepath.Join(r.private, fmt.Sprintf("herdr-pi-%d", os.Getuid()), "open")); len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		}
	})

	t.Run("failed send_input closes the pane", func(t *testing.T) {
		s := r.herdr(t, 0, 0)
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultClose, Methods: []string{"pane.send_input"}})
		res := r.open(t, s, fx.Completed, "api")
		if res.code != 1 || !strings.Contains(res.stderr, "starting the command in pane w1:p2") {
			t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		// pane.get: the pane is still the one split, not a namesake in a
		// Herdr started afresh.
		if m := strings.Join(s.Methods(), " "); m != "pane.layout pane.split pane.report_metadata pane.send_input pane.get pane.close" {
			t.Fatalf("calls %q", m)
		}
		if p := paramsOf(t, s.Requests()[5]); p["pane_id"] != "w1:p2" {
			t.Fatalf("closed %v", p)
		}
		if ex := s.WaitExited(t, "w1:p2", 10*time.Second); !ex.Closed {
			t.Fatalf("the pane ended %+v", ex)
		}
		if left, _ := os.ReadDir(filepath.Join(r.private, fmt.Sprintf("herdr-pi-%d", os.Getuid()), "open")); len(left) != 0 {
			t.Fatalf("left behind: %v", left)
		}
	})
}

func toStrings(v any) string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

package probe

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/permissions"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/pane/session"
	"github.com/herdr-pi/herdr-pi/pane/signals"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestInstructionIsExact(t *testing.T) {
	sum := sha256.Sum256([]byte(Instruction))
	if len(Instruction) != 291 || hex.EncodeToString(sum[:]) != "be401ed160134cebd55a66ee74b6a3809ca2a9166c0561365b3672a153da29bc" {
		t.Fatalf("instruction is %d bytes, sha256 %x; reference §15 says 291 bytes, be401ed1…", len(Instruction), sum)
	}
}

// The JavaScript cannot import Go's constant: this pins its copy to the one
// definition of the marker, pane/session's.
func TestProbeJSMarkerIsTheSessionMarker(t *testing.T) {
	want := fmt.Sprintf("const MARKER = %q;", session.Marker)
	if !strings.Contains(string(Source()), want) {
		t.Fatalf("probe.js does not declare %s", want)
	}
}

func TestWriteMakesAPrivateFile(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	dir := t.TempDir()
	path, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || filepath.Dir(path) != dir {
		t.Fatalf("%s: %v %v", path, fi.Mode(), err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != string(Source()) || !strings.Contains(string(b), "herdrPiProbe") {
		t.Fatal("written probe differs from the embedded one")
	}
	if got := Inject(path, []string{"--", "hello"}); !reflect.DeepEqual(got, []string{"-e", path, "--", "hello"}) {
		t.Fatalf("Inject = %q", got)
	}
}

// The probe goes only to Pi's interactive TUI (pi-agent.md §2; Pi 1.6.0's
// argument parser).
func TestInteractiveArgv(t *testing.T) {
	tests := []struct {
		args        string
		in, out     bool
		interactive bool
	}{
		{"", true, true, true},
		{"fix the bug", true, true, true},
		{"-c", true, true, true},
		{"-r", true, true, true},
		{"--session /s/a.jsonl", true, true, true},
		{"--model fake/fake-model --thinking high hello", true, true, true},
		{"--mode text", true, true, true},
		{"--mode=rpc", true, true, true}, // Pi reads it as an extension flag, not a mode
		{"--some-ext-flag -p", true, true, false},
		{"--some-ext-flag value", true, true, true},
		{"-e ./ext.ts -ne", true, true, true},
		{"-- -p", true, true, true}, // after --, "-p" is a message
		{"--session-dir /d", true, true, true},
		{"-p hi", true, true, false},
		{"--print", true, true, false},
		{"hi -p", true, true, false},
		{"--mode json hi", true, true, false},
		{"--mode rpc", true, true, false},
		{"--mode", true, true, false},
		{"--mode bogus", true, true, false},
		{"", false, true, false}, // stdin not a terminal: print mode
		{"", true, false, false}, // stdout not a terminal
		{"install npm:x", true, true, false},
		{"uninstall x", true, true, false},
		{"remove x", true, true, false},
		{"update", true, true, false},
		{"list", true, true, false},
		{"config", true, true, false},
		{"auth login", true, true, false},
		{"mcp list", true, true, false},
		{"hello install", true, true, true}, // a message, not a subcommand
		{"--version", true, true, false},
		{"-v", true, true, false},
		{"--help", true, true, false},
		{"-h", true, true, false},
		{"--export s.jsonl", true, true, false},
		{"--export s.jsonl out.html", true, true, false},
		{"--list-models", true, true, false},
		{"--list-models fake", true, true, false},
		{"-x", true, true, false}, // Pi: Unknown option, exit 1
		{"-p --model m", true, true, false},
		{"--model -p", true, true, true}, // -p is --model's value
		{"--append-system-prompt -p", true, true, true},
	}
	for _, tt := range tests {
		args := strings.Fields(tt.args)
		if got := Interactive(args, tt.in, tt.out); got != tt.interactive {
			t.Errorf("Interactive(%q, stdin tty %v, stdout tty %v) = %v, want %v", tt.args, tt.in, tt.out, got, tt.interactive)
		}
	}
}

// harness runs testdata/harness.mjs (probe.js under node, with a stand-in
// Pi) against a real control socket.
type harnessOut struct {
	HerdrEnv    []bool            `json:"herdrEnv"`
	Append      string            `json:"append"`
	AppendTwice string            `json:"appendTwice"`
	AppendEmpty string            `json:"appendEmpty"`
	Marker      []bool            `json:"marker"`
	Strip       []string          `json:"strip"`
	Question    []any             `json:"question"`
	LoadErrors  []string          `json:"loadErrors"`
	Prompt      map[string]string `json:"prompt"`
	PromptAgain map[string]string `json:"promptAgain"`
	Prefixes    []string          `json:"prefixes"`
	Full        string            `json:"full"`
	UserMsg     string            `json:"userMsg"`
	Transformer *string           `json:"transformer"`
	// ConnectedAfterQuit: the probe held a connection after the session
	// quit and the wrapper's end of it went away.
	ConnectedAfterQuit bool `json:"connectedAfterQuit"`
	// RetryCancelled: retryCancelled on the branch vectors.
	RetryCancelled []bool `json:"retryCancelled"`
	// TellsDialogs: piTellsDialogs on the entries of PI_ENTRIES.
	TellsDialogs []bool `json:"tellsDialogs"`
	// Connections the probe opened (or tried to).
	Connections int `json:"connections"`
	// KeptWhileDown and KeptAtMost: channel events the probe kept for the
	// wrapper (scenario kept).
	// EndedAtMostMillisAgo bounds, in the harness's reckoning, how long
	// before the resync the run ended (scenario reconnect).
	EndedAtMostMillisAgo float64 `json:"endedAtMostMillisAgo"`
	KeptWhileDown        int     `json:"keptWhileDown"`
	KeptAtMost           int     `json:"keptAtMost"`
	// Scenario stall: the most the connection buffered, how long Pi's
	// 2002 events took, and whether the probe kept its connection.
	MaxBuffered    int  `json:"maxBuffered"`
	FloodMillis    int  `json:"floodMillis"`
	SameConnection bool `json:"sameConnection"`
}

type sink struct {
	mu     sync.Mutex
	events []control.Event
	// ended counts the probe connections that ended: each one's events
	// were delivered before its end.
	ended int
}

func (s *sink) ProbeEvent(ev control.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.(type) {
	case control.ProbeConnected:
		return
	case control.ProbeDisconnected:
		s.ended++
		return
	}
	s.events = append(s.events, ev)
}
func (s *sink) Wait(control.WaitRequest) error { return nil }
func (s *sink) Status() control.Status         { return control.Status{} }

func node(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("HERDR_PI_TEST_NODE_BIN"); dir != "" {
		return filepath.Join(dir, "node")
	}
	p, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node", "install Node (CI installs Node 24 with .ci/install-pi)")
	}
	return p
}

var herdrVars = []string{"HERDR_ENV=1", "HERDR_SOCKET_PATH=/tmp/x", "HERDR_PANE_ID=w1:p1"}

// writtenProbe writes the probe into a fresh directory under /tmp (short
// enough for a unix socket beside it), removed when the test ends, and
// returns the directory and the probe's path.
func writtenProbe(t *testing.T) (dir, path string) {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "hpp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path, err = Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func runHarness(t *testing.T, scenario string, socket bool, env ...string) (harnessOut, []control.Event) {
	t.Helper()
	bin := node(t)
	dir, path := writtenProbe(t)
	s := &sink{}
	tok, _ := control.NewToken()
	srv, err := control.Listen(control.Config{Path: filepath.Join(dir, "c.sock"), Token: tok, Events: s, Requests: s, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "testdata/harness.mjs", "file://"+path)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "SCENARIO=" + scenario}, env...)
	if socket {
		cmd.Env = append(cmd.Env, control.EnvSocket+"="+srv.Path(), control.EnvToken+"="+tok)
	}
	b, err := cmd.Output()
	if err != nil {
		srv.Close()
		t.Fatalf("harness: %v\n%s", err, b)
	}
	var out harnessOut
	if err := json.Unmarshal(b, &out); err != nil {
		srv.Close()
		t.Fatalf("harness output %q: %v", b, err)
	}
	// The probe's connections close with node (each heard the server's
	// hello first); the server delivers what each carried before its end.
	if socket {
		deadline := time.Now().Add(30 * time.Second)
		for {
			s.mu.Lock()
			ended := s.ended
			s.mu.Unlock()
			if ended >= out.Connections {
				break
			}
			if time.Now().After(deadline) {
				srv.Close()
				t.Fatalf("%d of the probe's %d connections ended", ended, out.Connections)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	srv.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	return out, s.events
}

// Reference D3.1, run on the JavaScript itself.
func TestProbeFunctionsMatchTheReferenceVectors(t *testing.T) {
	out, _ := runHarness(t, "", false)
	if !reflect.DeepEqual(out.HerdrEnv, []bool{true, false, false, false}) {
		t.Errorf("isHerdrEnv: %v", out.HerdrEnv)
	}
	if out.Append != "base prompt\n\n"+Instruction || out.AppendTwice != out.Append || out.AppendEmpty != Instruction {
		t.Errorf("appendInstruction: %q / %q / %q", out.Append, out.AppendTwice, out.AppendEmpty)
	}
	if !reflect.DeepEqual(out.Marker, []bool{true, true, false, false}) {
		t.Errorf("hasMarker: %v", out.Marker)
	}
	// The question is the line of a reply ending with the marker that
	// asks — the last one ending in a question mark, outside code — else
	// the first line of its last paragraph; never the marker itself, cut
	// for the wire. A reply that reports before it asks is toasted with
	// what it asks, not with its opening sentence.
	q := []any{"Which file?", "", "", 500.0,
		"Which one should I edit: `main.go` or `app.go`?",
		"Which file should I edit?",
		"**Should I also migrate the data?**",
		"Tell me which one to fix first.",
		"Please confirm the plan.",
		"¿Qué archivo edito?",
		"要修改哪个文件？",
	}
	if !reflect.DeepEqual(out.Question, q) {
		t.Errorf("questionOf:\n got %#v\nwant %#v", out.Question, q)
	}
	want := []string{"Please choose one.", "Please choose one.", "Please choose one.\n\n:input_", "The marker is :input_needed: when input is required."}
	if !reflect.DeepEqual(out.Strip, want) {
		t.Errorf("stripMarker: %q", out.Strip)
	}
	if len(out.LoadErrors) != 0 {
		t.Errorf("loading threw: %q", out.LoadErrors)
	}
	// Only a failed reply left out for a retry that never came is a
	// cancelled retry.
	if want := []bool{true, true, false, false, false, false, false, false, false}; !reflect.DeepEqual(out.RetryCancelled, want) {
		t.Errorf("retryCancelled: %v, want %v", out.RetryCancelled, want)
	}
}

// The probe's hello says whether its Pi tells it of its dialogs: Pi does
// since 0.84.4. It reads the version from Pi's package, found above the
// entry script Pi was started by (.bin/pi, a link into the package, as npm
// installs it), or in PI_PACKAGE_DIR as Pi reads it; anything else says
// no.
func TestProbeSaysWhichPisTellItOfDialogs(t *testing.T) {
	root := t.TempDir()
	n := 0
	// install lays out a package as npm does and returns its .bin link.
	install := func(name, version, main string) (bin, dir string) {
		n++
		modules := filepath.Join(root, fmt.Sprint(n), "node_modules")
		dir = filepath.Join(modules, name)
		writeAll(t, filepath.Join(dir, main), "#!/usr/bin/env node\n")
		writeAll(t, filepath.Join(dir, "package.json"), fmt.Sprintf(`{"name":%q,"version":%q,"type":"module"}`, name, version))
		if strings.Contains(main, "bundle") {
			// A bundle's own package.json says only its module type.
			writeAll(t, filepath.Join(dir, filepath.Dir(main), "package.json"), `{"type":"module"}`)
		}
		bin = filepath.Join(modules, ".bin", "pi")
		if err := os.MkdirAll(filepath.Dir(bin), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", name, main), bin); err != nil {
			t.Fatal(err)
		}
		return bin, dir
	}
	old, _ := install("@mariozechner/pi-coding-agent", "0.73.1", "dist/cli.js")
	before, _ := install("@earendil-works/pi-coding-agent", "0.84.3", "dist/cli.js")
	since, _ := install("@earendil-works/pi-coding-agent", "0.84.4", "dist/cli.js")
	// Prereleases rank below their release (semver): an rc of 0.84.4 may
	// predate the dialog events, one of a later version does not.
	rc, _ := install("@earendil-works/pi-coding-agent", "0.84.4-rc.1", "dist/cli.js")
	laterRC, _ := install("@earendil-works/pi-coding-agent", "0.84.5-rc.1", "dist/cli.js")
	built, _ := install("@earendil-works/pi-coding-agent", "0.84.4+nix.1", "dist/cli.js")
	notSemver, _ := install("@earendil-works/pi-coding-agent", "0.84.4.1", "dist/cli.js")
	current, currentDir := install("@earendil-works/pi-coding-agent", "1.6.0", "dist/bundle/cli.js")
	fork, _ := install("@someone/pi-fork", "2.0.0", "dist/cli.js")
	bare := filepath.Join(root, "bare", "cli.js")
	writeAll(t, bare, "#!/usr/bin/env node\n")
	// PI_PACKAGE_DIR as Pi reads it (normalizePath in its config, the
	// same from 0.84.4 to 1.6.0): "~" and "~/…" are the home directory,
	// a file:// URL is its path; "~name" is a relative path like any.
	home := filepath.Join(root, "home")
	pkg160 := `{"name":"@earendil-works/pi-coding-agent","version":"1.6.0"}`
	writeAll(t, filepath.Join(home, "package.json"), pkg160)
	writeAll(t, filepath.Join(home, "nix", "pi", "package.json"), pkg160)
	writeAll(t, filepath.Join(root, "homenix", "pi", "package.json"), pkg160)
	// Pi's standalone binary (Bun's compiled executable, Pi's "bun-binary"
	// install): its entry is inside the binary, which Bun names
	// /$bunfs/root/…, and Pi's package.json lies beside the binary, where
	// Pi itself looks (getPackageDir: dirname(process.execPath)). Put on
	// PATH through a link, as an installer does.
	binary := filepath.Join(root, "standalone", "pi")
	writeAll(t, binary, "\x7fELF")
	writeAll(t, filepath.Join(root, "standalone", "package.json"), `{"name":"@earendil-works/pi-coding-agent","version":"1.6.0"}`)
	linked := filepath.Join(root, "bin", "pi")
	if err := os.MkdirAll(filepath.Dir(linked), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary, linked); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, entry, packageDir string
		want                    bool
		execPath                string // "": node's own
	}{
		{"Pi 0.73.1", old, "", false, ""},
		{"Pi 0.84.3", before, "", false, ""},
		{"Pi 0.84.4", since, "", true, ""},
		{"Pi 0.84.4-rc.1", rc, "", false, ""},
		{"Pi 0.84.5-rc.1", laterRC, "", true, ""},
		{"Pi 0.84.4+nix.1", built, "", true, ""},
		{"a version that is not semver", notSemver, "", false, ""},
		{"Pi 1.6.0, bundled", current, "", true, ""},
		{"a fork", fork, "", false, ""},
		{"no package", bare, "", false, ""},
		{"PI_PACKAGE_DIR", bare, currentDir, true, ""},
		{"PI_PACKAGE_DIR ~", bare, "~", true, ""},
		{"PI_PACKAGE_DIR ~/nix/pi", bare, "~/nix/pi", true, ""},
		{"PI_PACKAGE_DIR file://", bare, "file://" + currentDir, true, ""},
		{"PI_PACKAGE_DIR ~nix/pi, not the home's", bare, "~nix/pi", false, ""},
		{"no such entry", filepath.Join(root, "gone.js"), "", false, ""},
		{"Pi 1.6.0, a standalone binary", "/$bunfs/root/pi", "", true, binary},
		{"Pi 1.6.0, a standalone binary run through a link", "/$bunfs/root/pi", "", true, linked},
	}
	var entries [][3]string
	for _, c := range cases {
		entries = append(entries, [3]string{c.entry, c.packageDir, c.execPath})
	}
	b, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := runHarness(t, "", false, "PI_ENTRIES="+string(b), "HOME="+home)
	if len(out.TellsDialogs) != len(cases) {
		t.Fatalf("piTellsDialogs answered %v for %d entries", out.TellsDialogs, len(cases))
	}
	for i, c := range cases {
		if out.TellsDialogs[i] != c.want {
			t.Errorf("%s: piTellsDialogs %v, want %v", c.name, out.TellsDialogs[i], c.want)
		}
	}
}

func writeAll(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A failed reply's agent_end says what Pi said went wrong (the wrapper
// picks the line to show). Escape on Pi's retry countdown: the settle says
// the retry was cancelled;
// a reply left out for a compaction that then failed is not. Escape on
// that compaction: the settle says it was cancelled, unless a model turn
// came after.
func TestProbeSaysARetryWasCancelled(t *testing.T) {
	_, events := runHarness(t, "retry", true, herdrVars...)
	want := []control.Event{
		control.SessionStart{Reason: "startup", SessionSeq: 1, SessionFile: "/s/one.jsonl", SessionID: "sid", Mode: "tui", HasUI: true, Cwd: "/proj"},
		control.AgentStart{},
		control.AgentEnd{StopReason: "error", ErrorMessage: "503 overloaded"},
		control.AgentSettled{RetryCancelled: true, Idle: true},
		control.AgentStart{},
		control.AgentEnd{StopReason: "error", ErrorMessage: "400: context\nsecond line"},
		control.CompactionStart{},
		control.CompactionEnd{},
		control.AgentSettled{Idle: true},
		control.AgentStart{},
		control.AgentEnd{StopReason: "error"},
		control.CompactionStart{},
		control.CompactionEnd{},
		control.AgentSettled{CompactionCancelled: true, Idle: true},
		control.AgentStart{},
		control.AgentEnd{StopReason: "error"},
		control.CompactionStart{},
		control.CompactionEnd{},
		control.AgentStart{},
		control.AgentEnd{StopReason: "stop"},
		control.AgentSettled{Idle: true},
	}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events:\n got %#v\nwant %#v", events, want)
	}
}

func TestProbeInTUIInsideHerdr(t *testing.T) {
	out, events := runHarness(t, "tui", true, herdrVars...)
	if out.Prompt["systemPrompt"] != "base prompt\n\n"+Instruction || out.PromptAgain["systemPrompt"] != out.Prompt["systemPrompt"] {
		t.Errorf("before_agent_start: %q then %q", out.Prompt, out.PromptAgain)
	}
	for i, p := range out.Prefixes {
		if p != "Which runtime should I use?" {
			t.Errorf("streaming prefix %d shown as %q", i+1, p)
		}
	}
	if out.Full != "Which runtime should I use?" || out.UserMsg != "Which runtime should I use?\n\n:input_needed:" {
		t.Errorf("transform: full %q, user %q", out.Full, out.UserMsg)
	}
	long := ""
	want := []control.Event{
		control.SessionStart{Reason: "startup", SessionSeq: 1, SessionFile: "/s/one.jsonl", SessionID: "sid", Mode: "tui", HasUI: true, Cwd: "/proj"},
		control.AgentStart{},
		control.WaitingForInput{Source: "plan-md:request_user_input", ID: "call-1", Waiting: true},
		// the circular ui_prompt arrives without its loop
		control.PermissionPrompt{Prompt: permissions.Prompt{RequestID: "r1"}},
		nil, // r2 with its long message cut; checked below
		control.HerdrBlocked{Active: true, Label: "deploy"},
		control.UIPromptStart{Kind: "confirm", Title: "Sure?"},
		control.AgentEnd{StopReason: "stop", SessionName: "auth refactor", InputNeeded: true, Question: "Which runtime should I use?", QuestionEntry: "a1"},
		control.AgentSettled{Idle: true, SessionName: "auth refactor", InputNeeded: true, Question: "Which runtime should I use?", QuestionEntry: "a1"},
		control.SessionShutdown{Reason: "reload"},
		control.SessionStart{Reason: "reload", SessionSeq: 2, SessionName: "auth refactor", SessionFile: "/s/one.jsonl", SessionID: "sid", Mode: "tui", HasUI: true, Cwd: "/proj",
			InputNeeded: true, Question: "Which runtime should I use?", QuestionEntry: "a1"},
		control.HerdrBlocked{},
		control.SessionShutdown{Reason: "quit"},
	}
	if len(events) == len(want) {
		if p, ok := events[4].(control.PermissionPrompt); ok && p.RequestID == "r2" && len(p.Message) < 2100 {
			want[4] = events[4]
			long = p.Message
		}
	}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events:\n got %#v\nwant %#v", events, want)
	}
	if !strings.HasSuffix(long, "…") {
		t.Errorf("a long payload string was not cut: %d bytes", len(long))
	}
}

// Reference §14: only the root UI session is changed and reported. A
// sub-session run in the same Pi process without a UI loads the probe too;
// it must not guide its model, report its runs or its marker, or stop the
// root's screen from hiding the marker.
func TestProbeSubSessionStaysQuiet(t *testing.T) {
	out, events := runHarness(t, "subsession", true, herdrVars...)
	if out.Prompt != nil {
		t.Errorf("the sub-session's prompt was changed: %q", out.Prompt)
	}
	if out.PromptAgain["systemPrompt"] != "base prompt\n\n"+Instruction {
		t.Errorf("the root's prompt after the sub-session: %q", out.PromptAgain)
	}
	if out.Full != "Which runtime should I use?" {
		t.Errorf("the root's screen shows the marker after the sub-session: %q", out.Full)
	}
	want := []control.Event{
		control.SessionStart{Reason: "startup", SessionSeq: 1, SessionFile: "/s/one.jsonl", SessionID: "sid", Mode: "tui", HasUI: true, Cwd: "/proj"},
		control.AgentStart{},
		control.SessionShutdown{Reason: "quit"},
	}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events:\n got %#v\nwant %#v", events, want)
	}
}

// The wrapper counts its line limit in bytes and closes a connection whose
// line is longer (control.MaxLine). A payload with many long strings of
// three-byte characters is short in JavaScript's count and long in bytes:
// it must arrive with its id, on the same connection, and so must what
// follows it. A circular payload loses only its loop, never the field that
// decides the event (a herdr:blocked without active would close a wait).
func TestProbeFitsWidePayloadsIntoALine(t *testing.T) {
	out, events := runHarness(t, "wide", true, herdrVars...)
	if out.Connections != 1 {
		t.Errorf("the probe connected %d times; the wrapper must never have dropped it", out.Connections)
	}
	var msg string
	if len(events) > 1 {
		if p, ok := events[1].(control.PermissionPrompt); ok && p.RequestID == "wide" {
			msg = p.Message
			events[1] = control.PermissionPrompt{Prompt: permissions.Prompt{RequestID: "wide"}}
		}
	}
	want := []control.Event{
		control.SessionStart{Reason: "startup", SessionSeq: 1, SessionFile: "/s/one.jsonl", SessionID: "sid", Mode: "tui", HasUI: true, Cwd: "/proj"},
		control.PermissionPrompt{Prompt: permissions.Prompt{RequestID: "wide"}},
		control.HerdrBlocked{Active: true, Label: "deploy"},
		control.AskStarted{FlowID: "f1", Title: "Which?"},
		control.SessionShutdown{Reason: "quit"},
	}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events:\n got %#v\nwant %#v", events, want)
	}
	if !strings.HasPrefix(msg, "確") || !strings.HasSuffix(msg, "…") || len(msg) >= 2000*3 {
		t.Errorf("the wide message was not cut short enough to fit: %d bytes", len(msg))
	}
}

// Reference D3.3 #3: in RPC mode nothing changes and nothing is sent;
// D3.2 #1: outside a complete Herdr environment the prompt and the screen
// stay as they are, but the wrapper still hears the lifecycle.
func TestProbeOutsideTUIOrHerdr(t *testing.T) {
	out, events := runHarness(t, "rpc", true, herdrVars...)
	if out.Prompt != nil || (out.Transformer != nil && *out.Transformer != "Which runtime should I use?\n\n:input_needed:") || len(events) != 0 {
		t.Errorf("rpc mode: prompt %q, transform %v, events %#v", out.Prompt, out.Transformer, events)
	}
	out, events = runHarness(t, "outside", true, "HERDR_ENV=1", "HERDR_PANE_ID=w1:p1")
	if out.Prompt != nil || out.Transformer != nil {
		t.Errorf("outside Herdr: prompt %q, transformer registered %v", out.Prompt, out.Transformer != nil)
	}
	want := []control.Event{
		control.SessionStart{Reason: "startup", SessionSeq: 1, SessionFile: "/s/one.jsonl", SessionID: "sid", Mode: "tui", HasUI: true, Cwd: "/proj"},
		control.AgentStart{},
		control.HerdrBlocked{Active: true},
	}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("outside Herdr the lifecycle is still reported:\n got %#v\nwant %#v", events, want)
	}
}

// Pi 0.73.1 has no ctx.mode and no Markdown transformers: the mode is
// inferred, the prompt still gets the guidance.
// Pi's getLeafId names the entry this Pi continues from, which the wrapper
// needs when another Pi continues the same session file (pi-agent.md
// §5.1): the probe says it with the session, as each run starts, ends and
// settles, and on a move in the tree (/tree), which starts no run; a resync
// mid-run repeats the run's start with the leaf as it is then. An empty
// session's null leaf goes as "". Pis without getLeafId say none (the
// other tests: their events carry no leaf).
func TestProbeNamesItsLeaf(t *testing.T) {
	_, events := runHarness(t, "leaf", true, herdrVars...)
	leaf := func(id string) control.Leaf { return &id }
	session := control.SessionStart{SessionSeq: 1, SessionFile: "/s/one.jsonl", SessionID: "sid", Mode: "tui", HasUI: true, Cwd: "/proj"}
	start, resync := session, session
	start.Reason, start.LeafID = "startup", leaf("")
	resync.Reason, resync.LeafID, resync.Running = "reconnect", leaf("a1"), true
	want := []control.Event{
		start,
		control.AgentStart{LeafID: leaf("")},
		resync,
		control.AgentStart{LeafID: leaf("a1")},
		control.AgentEnd{LeafID: leaf("a1")},
		control.AgentSettled{Idle: true, LeafID: leaf("a1")},
		control.SessionTree{LeafID: leaf("u1")},
		control.SessionShutdown{Reason: "quit"},
	}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events:\n got %s\nwant %s", show(events), show(want))
	}
}

// show prints events with their leaves, which %#v shows as addresses.
func show(evs []control.Event) string {
	b, _ := json.Marshal(evs)
	var names []string
	for _, e := range evs {
		names = append(names, e.EventName())
	}
	return strings.Join(names, ",") + " " + string(b)
}

func TestProbeOnOldPiAPI(t *testing.T) {
	out, events := runHarness(t, "old", true, herdrVars...)
	if out.Prompt["systemPrompt"] != "base prompt\n\n"+Instruction {
		t.Errorf("prompt %q", out.Prompt)
	}
	want := []control.Event{
		control.SessionStart{Reason: "startup", SessionSeq: 1, SessionFile: "/s/one.jsonl", SessionID: "sid", Mode: "tui", ModeInferred: true, HasUI: true, Cwd: "/proj"},
		control.AgentEnd{StopReason: "error"},
	}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events:\n got %#v\nwant %#v", events, want)
	}
}

// A connection the wrapper drops (a hello that came too late, under load)
// takes events with it. The probe connects again by itself and repeats
// what the wrapper needs — the session, asked afresh, a run under way, the
// dialogs open — before anything new; after a quit it repeats nothing.
func TestProbeRepeatsWhatALostConnectionTook(t *testing.T) {
	out, events := runHarness(t, "reconnect", true, herdrVars...)
	start := func(reason string, waiting bool) control.SessionStart {
		s := control.SessionStart{Reason: reason, SessionSeq: 1, SessionFile: "/s/one.jsonl", SessionID: "sid", Mode: "tui", HasUI: true, Cwd: "/proj"}
		if waiting {
			s.InputNeeded, s.Question, s.QuestionEntry = true, "Which runtime should I use?", "a1"
		}
		return s
	}
	midRun := start("reconnect", false)
	midRun.Running = true // said before its agent_start
	dialog := control.UIPromptStart{Kind: "confirm", Title: "Sure?"}
	// Lost at rest after the run ended: the resync says how it ended (the
	// wrapper may not have heard).
	atRest := start("reconnect", true)
	atRest.LastRun = &control.RunEnd{Ended: 1}
	want := []control.Event{
		start("startup", false), control.AgentStart{}, dialog,
		// lost mid-run with the dialog open
		midRun, control.AgentStart{}, dialog,
		control.UIPromptEnd{Kind: "confirm", Title: "Sure?"},
		control.AgentSettled{Idle: true, InputNeeded: true, Question: "Which runtime should I use?", QuestionEntry: "a1"},
		// lost at rest, the reply waiting for the user
		atRest,
		control.SessionShutdown{Reason: "quit"},
	}
	// The resync at rest says how long ago the run ended: by Pi's clock,
	// so only bounded here (it ended within the harness's span, from just
	// before its settle to the resync's answer).
	for i, ev := range events {
		if s, ok := ev.(control.SessionStart); ok && s.LastRun != nil {
			ago := s.LastRun.EndedMsAgo
			if ago == nil || *ago < 0 || *ago > out.EndedAtMostMillisAgo+1 {
				t.Fatalf("resync at rest: endedMsAgo %v, want between 0 and %.0f", ago, out.EndedAtMostMillisAgo)
			}
			run := *s.LastRun
			run.EndedMsAgo = nil
			s.LastRun = &run
			events[i] = s
		}
	}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events:\n got %#v\nwant %#v", events, want)
	}
	if out.ConnectedAfterQuit {
		t.Error("the probe connected again after the session quit")
	}
}

// The channel events of a while the wrapper could not be reached are kept
// and written right after the resync of the next connection, so a pi-ask
// answered meanwhile closes in the wrapper (which held it open) and one
// still open stays; one written on a connection the wrapper never took is
// written again. They are bounded: past 128 the oldest go, and the wrapper
// is told how many before the rest.
func TestProbeKeepsChannelEventsWhileDisconnected(t *testing.T) {
	out, events := runHarness(t, "kept", true, herdrVars...)
	start := func(reason string) control.SessionStart {
		return control.SessionStart{Reason: reason, SessionSeq: 1, SessionFile: "/s/one.jsonl", SessionID: "sid", Mode: "tui", HasUI: true, Cwd: "/proj"}
	}
	want := []control.Event{
		start("startup"), control.AskStarted{FlowID: "f1", Title: "Which?"}, control.AskStarted{FlowID: "f2", Title: "Where?"},
		// lost; f1 answered and a permission prompt opened meanwhile
		start("reconnect"), control.AskCompleted{FlowID: "f1"},
		control.PermissionPrompt{Prompt: permissions.Prompt{RequestID: "r1", Message: "Allow git push?"}},
		control.HerdrBlocked{Active: true, Label: "deploy"},
		// lost again; 201 events meanwhile (an answer, 200 waits), the
		// last 128 kept
		start("reconnect"), control.ChannelEventsLost{Dropped: 201 - 128},
	}
	for i := 200 - 128; i < 200; i++ {
		want = append(want, control.WaitingForInput{Source: "s", ID: fmt.Sprintf("w%d", i), Waiting: i%2 == 0})
	}
	want = append(want, control.AgentStart{}, control.SessionShutdown{Reason: "quit"})
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events:\n got %#v\nwant %#v", events, want)
	}
	if out.KeptWhileDown != 2 || out.KeptAtMost != 128 {
		t.Fatalf("kept %d events while down (want 2: the answer and the prompt), %d at most (want 128)", out.KeptWhileDown, out.KeptAtMost)
	}
}

// reasonMachine is a state machine for a test, stopped at its end, that
// records the reasons it opens ("+key") and closes ("-key") in order,
// under the mutex it returns.
func reasonMachine(t *testing.T) (*state.Machine, *sync.Mutex, *[]string) {
	var mu sync.Mutex
	var reasons []string
	m := state.New(state.Config{Sink: func(e state.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case state.EventOpened:
			reasons = append(reasons, "+"+e.Reason.Key)
		case state.EventClosed:
			reasons = append(reasons, "-"+e.Reason.Key)
		}
	}})
	t.Cleanup(m.Stop)
	return m, &mu, &reasons
}

// The same, through the wrapper's own signals and state machine: what
// reaches the sinks (Herdr, the notifications) is one open per wait, no
// close and reopen across the losses; the pi-ask answered while the probe
// was away closes once, the one still open stays until the probe says it
// lost events, and then everything the lost events may have closed closes.
func TestKeptChannelEventsReachThePaneWithoutABlip(t *testing.T) {
	bin := node(t)
	dir, path := writtenProbe(t)
	m, mu, reasons := reasonMachine(t)
	sig := signals.New(signals.Config{Machine: m, Agent: "pi", Logf: t.Logf})
	ended := &sink{}
	events := probeEvents{sig, ended}
	tok, _ := control.NewToken()
	srv, err := control.Listen(control.Config{Path: filepath.Join(dir, "c.sock"), Token: tok, Events: events, Requests: sig, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cmd := exec.Command(bin, "testdata/harness.mjs", "file://"+path)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "SCENARIO=kept", control.EnvSocket + "=" + srv.Path(), control.EnvToken + "=" + tok}, herdrVars...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("harness: %v\n%s", err, b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ended.mu.Lock()
		n := ended.ended
		ended.mu.Unlock()
		if n >= 3 { // the first connection, the second, and the last (the dial in between never connected)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d probe connections ended, want 3", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var channelWaits []string // all but the 128 kept waits
	for _, r := range *reasons {
		if !strings.HasPrefix(r[1:], "wait:s:") {
			channelWaits = append(channelWaits, r)
		}
	}
	want := []string{"+ask:f1", "+ask:f2",
		// back: the answer kept while away
		"-ask:f1", "+permission:r1", "+herdr:blocked#1",
		// back having lost events: what was open closes
		"-herdr:blocked#1", "-ask:f2", "-permission:r1"}
	if !reflect.DeepEqual(channelWaits, want) {
		t.Fatalf("reasons opened and closed: %q, want %q", channelWaits, want)
	}
}

// A channel event the wrapper read on a connection that failed before the
// probe heard the wrapper's answer is written again on the next one: the
// probe cannot know it arrived. The repeat is the same event and counts
// once, through the wrapper's own socket, signals and state machine: a
// herdr:blocked counted twice kept the pane blocked after its one close.
func TestAChannelEventRepeatedAfterAnUnheardAnswerCountsOnce(t *testing.T) {
	bin := node(t)
	dir, path := writtenProbe(t)
	m, mu, reasons := reasonMachine(t)
	sig := signals.New(signals.Config{Machine: m, Agent: "pi", Logf: t.Logf})
	blocked := make(chan control.HerdrBlocked, 8)
	events := eventFunc(func(ev control.Event) {
		sig.ProbeEvent(ev)
		if b, ok := ev.(control.HerdrBlocked); ok {
			blocked <- b
		}
	})
	tok, _ := control.NewToken()
	srv, err := control.Listen(control.Config{Path: filepath.Join(dir, "c.sock"), Token: tok, Events: events, Requests: sig, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cmd := exec.Command(bin, "testdata/harness.mjs", "file://"+path)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "SCENARIO=repeat", control.EnvSocket + "=" + srv.Path(), control.EnvToken + "=" + tok}, herdrVars...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	next := func(what string) control.HerdrBlocked {
		t.Helper()
		select {
		case b := <-blocked:
			return b
		case <-time.After(30 * time.Second):
			t.Fatalf("no herdr:blocked reached the wrapper (waiting for %s); harness: %s", what, stderr.String())
			return control.HerdrBlocked{}
		}
	}
	if b := next("the first"); !b.Active {
		t.Fatalf("first herdr:blocked %+v, want active", b)
	}
	io.WriteString(stdin, "the wrapper has it\n")
	var got []control.HerdrBlocked
	for {
		b := next("the close")
		got = append(got, b)
		if !b.Active {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("harness: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var out harnessOut
	if err := json.Unmarshal([]byte(stdout.String()), &out); err != nil {
		t.Fatalf("harness output %q: %v", stdout.String(), err)
	}
	if out.KeptWhileDown != 1 {
		t.Fatalf("the probe kept %d events when its connection failed, want 1 (the one it wrote again)", out.KeptWhileDown)
	}
	var open []string
	for _, r := range m.Snapshot().Reasons {
		open = append(open, r.Key)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"+herdr:blocked#1", "-herdr:blocked#1"}
	if len(got) != 1 || !reflect.DeepEqual(*reasons, want) || len(open) != 0 {
		t.Fatalf("after the close: herdr:blocked events delivered after the first %+v (want the close only), reasons %q (want %q), open %q (want none)",
			got, *reasons, want, open)
	}
}

// eventFunc is an EventSink of one function.
type eventFunc func(control.Event)

func (f eventFunc) ProbeEvent(ev control.Event) { f(ev) }

// probeEvents hands the probe's events to the wrapper's signals and counts
// the connections that ended.
type probeEvents struct {
	sig   *signals.Signals
	ended *sink
}

func (p probeEvents) ProbeEvent(ev control.Event) {
	p.sig.ProbeEvent(ev)
	p.ended.ProbeEvent(ev)
}

// A wrapper that answers the probe's hello and then stops reading (it is
// stuck): Pi is never held up — its events go on at once while the wrapper
// reads nothing — and the probe buffers at most MAX_BACKLOG (1 MiB, plus
// the line that crossed it), dropping Pi's events beyond. Once the wrapper
// reads again it gets what was buffered, then, on the same connection, what
// it needs to be right again: the session (reason reconnect), the run
// under way, and the channel events kept meanwhile, in order.
func TestProbeFallsBehindAStuckWrapperAndCatchesUp(t *testing.T) {
	bin := node(t)
	dir, path := writtenProbe(t)
	ln, err := net.Listen("unix", filepath.Join(dir, "c.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	resume := make(chan struct{})
	type result struct {
		names []string
		tail  []control.Event
		err   error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		r := bufio.NewReaderSize(c, control.MaxLine)
		if _, err := r.ReadString('\n'); err != nil { // hello
			got <- result{err: err}
			return
		}
		c.Write([]byte(`{"type":"hello","ok":true,"version":1}` + "\n"))
		<-resume
		var res result
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				break
			}
			m, err := control.Decode(line)
			if err != nil {
				res.err = fmt.Errorf("a torn or bad line %.80q: %v", line, err)
				break
			}
			ev, err := control.ParseEvent(m.Name, m.Data)
			if err != nil {
				res.err = fmt.Errorf("event %s: %v", m.Name, err)
				break
			}
			res.names = append(res.names, m.Name)
			if m.Name == control.EvAgentEnd {
				res.tail = nil
				continue
			}
			res.tail = append(res.tail, ev)
		}
		got <- res
	}()
	cmd := exec.Command(bin, "testdata/harness.mjs", "file://"+path)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "SCENARIO=stall", control.EnvSocket + "=" + ln.Addr().String(), control.EnvToken + "=x"}, herdrVars...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := bufio.NewScanner(stderr)
	for said.Scan() {
		if said.Text() == "stalled" {
			break
		}
		t.Logf("harness: %s", said.Text())
	}
	close(resume)
	go io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("harness: %v\n%s", err, stdout.String())
	}
	var out harnessOut
	if err := json.Unmarshal([]byte(stdout.String()), &out); err != nil {
		t.Fatalf("harness output %q: %v", stdout.String(), err)
	}
	res := <-got
	if res.err != nil {
		t.Fatal(res.err)
	}
	ends := 0
	for _, n := range res.names {
		if n == control.EvAgentEnd {
			ends++
		}
	}
	t.Logf("%d of 2000 agent_end lines arrived; at most %d bytes buffered; Pi's 2002 events took %d ms", ends, out.MaxBuffered, out.FloodMillis)
	start := control.SessionStart{Reason: "reconnect", SessionSeq: 1, SessionFile: "/s/one.jsonl", SessionID: "sid", Mode: "tui", HasUI: true, Cwd: "/proj", Running: true}
	want := []control.Event{start, control.AgentStart{}, control.AskStarted{FlowID: "f9", Title: "Which?"},
		control.AgentSettled{Idle: true}, control.SessionShutdown{Reason: "quit"}}
	if !reflect.DeepEqual(res.tail, want) {
		t.Fatalf("after the buffered lines:\n got %#v\nwant %#v", res.tail, want)
	}
	const maxBacklog = 1 << 20
	if out.MaxBuffered > maxBacklog+control.MaxLine || !out.SameConnection {
		t.Fatalf("buffered at most %d bytes (bound %d and a line), kept its connection %v", out.MaxBuffered, maxBacklog, out.SameConnection)
	}
	if ends == 0 || ends >= 2000 {
		t.Fatalf("%d of the 2000 agent_end lines arrived; want some dropped, not all", ends)
	}
}

// A wrapper that hangs up on every connection without answering its hello
// is tried again a bounded number of times (five), each try repeating the
// session; Pi's next event tries once more.
func TestProbeRedialsAreBounded(t *testing.T) {
	bin := node(t)
	dir, path := writtenProbe(t)
	ln, err := net.Listen("unix", filepath.Join(dir, "c.sock"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var firstLines []string // each connection's second line: what it says after hello
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			r := bufio.NewReader(c)
			r.ReadString('\n') // hello
			line, _ := r.ReadString('\n')
			c.Close()
			var m struct {
				Name string `json:"name"`
				Data struct {
					Reason string `json:"reason"`
				} `json:"data"`
			}
			json.Unmarshal([]byte(line), &m)
			mu.Lock()
			firstLines = append(firstLines, m.Name+"("+m.Data.Reason+")")
			mu.Unlock()
		}
	}()
	cmd := exec.Command(bin, "testdata/harness.mjs", "file://"+path)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "SCENARIO=hangup", control.EnvSocket + "=" + ln.Addr().String(), control.EnvToken + "=x"}, herdrVars...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("harness: %v\n%s", err, b)
	}
	ln.Close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	redial := "session_start(reconnect)"
	want := []string{"session_start(startup)", redial, redial, redial, redial, redial, redial}
	if !reflect.DeepEqual(firstLines, want) {
		t.Fatalf("connections began with %q, want %q (five redials, then one for Pi's agent_start)", firstLines, want)
	}
}

// Without a reachable wrapper Pi runs normally: nothing throws, the
// guidance is still added (the wrapper reads the session file instead).
func TestProbeWithoutSocket(t *testing.T) {
	out, _ := runHarness(t, "nosocket", false, append(herdrVars, control.EnvSocket+"=/tmp/nonexistent.sock", control.EnvToken+"=x")...)
	if out.Prompt["systemPrompt"] != Instruction {
		t.Errorf("prompt %q", out.Prompt)
	}
}

package session

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/settings"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Reference D3.1 (hasInputNeededMarker), §16 and the JavaScript traps of
// §27, plus the code-fence cases the acceptance names.
func TestHasMarker(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"Please choose one.\n\n:input_needed:", true},
		{"Please choose one.\r\n  :input_needed:  \r\n", true},
		{"The marker is :input_needed: when input is required.", false},
		{":input_needed:\nAdditional text", false},
		{":input_needed:", true},
		{"\t:input_needed:\t\n\n\n", true},
		{":INPUT_NEEDED:", false},
		{":input_needed", false},
		{"`:input_needed:`", false},
		{"Question?\n:input_needed:\ufeff", true},  // U+FEFF is JS whitespace
		{"Question?\n:input_needed:\u0085", false}, // U+0085 is not
		{"Question?\n:input_needed:\u00a0\u3000", true},
		{"Question?\r:input_needed:", false}, // a lone CR does not split
		{"a\n```\n:input_needed:\n```", false},
		{"a\n```\n:input_needed:\n```\n", false},
		{"a\n```text\nend with :input_needed:\n```\n:input_needed:", true},
		{"", false},
		{"\n\n", false},
	}
	for _, tt := range tests {
		if got := HasMarker(tt.text); got != tt.want {
			t.Errorf("HasMarker(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// session lines, written the way Pi writes them.
func header(cwd string) string {
	return fmt.Sprintf(`{"type":"session","version":3,"id":"01a22799-ba7b-7032-8994-b66058536b75","timestamp":"2026-11-29T13:58:35.899Z","cwd":%q}`, cwd)
}

// msg is one entry line, stamped with a fixed time from before any test
// runs: read by a watcher, it is the session's history (Sentinel.Old).
func msg(id, parent, role string, content any, stop string) string {
	m := map[string]any{"role": role, "content": content}
	if stop != "" {
		m["stopReason"] = stop
	}
	var p any
	if parent != "" {
		p = parent
	}
	b, _ := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": p, "timestamp": "2026-11-29T13:58:36.026Z", "message": m})
	return string(b)
}

func text(s ...string) []any {
	var parts []any
	for _, x := range s {
		parts = append(parts, map[string]string{"type": "text", "text": x})
	}
	return parts
}

// handOver is an assistant reply's content that says s, then calls a tool.
func handOver(s string) []any {
	return append(text(s), map[string]any{"type": "toolCall", "id": "call-1", "name": "bash", "arguments": map[string]any{"command": "ls"}})
}

func other(id, parent, typ string) string {
	return fmt.Sprintf(`{"type":%q,"id":%q,"parentId":%q,"timestamp":"t"}`, typ, id, parent)
}

func treeOf(t *testing.T, lines ...string) *Tree {
	t.Helper()
	tr := NewTree()
	for _, l := range lines {
		if e, err := ParseLine([]byte(l)); err == nil {
			tr.Add(e)
		}
	}
	return tr
}

func TestBlockedRuleOnBranches(t *testing.T) {
	const q = "Which runtime should I use?\n\n:input_needed:"
	base := []string{header("/p"), `{"type":"model_change","id":"m0","parentId":null,"provider":"fake","modelId":"fake-model"}`}
	tests := []struct {
		name  string
		lines []string
		want  string // blocking entry id, "" for not blocked
	}{
		{"marker reply", []string{msg("u1", "m0", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(q), "stop")}, "a1"},
		{"answered later", []string{msg("u1", "m0", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(q), "stop"), msg("u2", "a1", "user", text("Use Bun."), "")}, ""},
		{"answered, string content", []string{msg("a1", "m0", "assistant", text(q), "stop"), msg("u2", "a1", "user", "Use Bun.", "")}, ""},
		{"mentions mid-text", []string{msg("a1", "m0", "assistant", text("The marker is :input_needed: when input is required."), "stop")}, ""},
		{"inside a closed fence", []string{msg("a1", "m0", "assistant", text("Example:\n```\n:input_needed:\n```"), "stop")}, ""},
		{"text parts joined with newline", []string{msg("a1", "m0", "assistant", text("Which one?", ":input_needed:"), "stop")}, "a1"},
		{"thinking does not count", []string{msg("a1", "m0", "assistant", []any{map[string]string{"type": "thinking", "thinking": ":input_needed:"}, map[string]string{"type": "text", "text": "Done."}}, "stop")}, ""},
		{"string content", []string{msg("a1", "m0", "assistant", "Pick:\n:input_needed:", "stop")}, "a1"},
		{"aborted reply still counts", []string{msg("a1", "m0", "assistant", text(q), "aborted")}, "a1"},
		{"error reply has no text", []string{msg("a1", "m0", "assistant", []any{}, "error")}, ""},
		{"tool results and custom entries are passed over", []string{msg("a1", "m0", "assistant", text(q), "stop"), msg("c1", "a1", "custom", text("x"), ""), other("l1", "c1", "label"), msg("t1", "l1", "toolResult", text("out"), "")}, "a1"},
		// A session left right after a reply that ends with the marker and
		// hands over to tools (Pi killed, or the run aborted mid-tool): the
		// reference's restore and the probe's reading count it (§16, §20),
		// so the file read at start does too. Read while the run goes on,
		// it does not block (TestWatcherRestoresAHandOverButNotMidRun).
		{"restore: a hand-over with the marker, cut before its result", []string{msg("a1", "m0", "assistant", handOver(q), "toolUse")}, "a1"},
		{"restore: a hand-over with the marker and its tool result", []string{msg("a1", "m0", "assistant", handOver(q), "toolUse"), msg("t1", "a1", "toolResult", text("out"), "")}, "a1"},
		{"restore: a hand-over without the marker", []string{msg("a1", "m0", "assistant", handOver("Let me look."), "toolUse"), msg("t1", "a1", "toolResult", text("out"), "")}, ""},
		{"restore: a hand-over answered by the user", []string{msg("a1", "m0", "assistant", handOver(q), "toolUse"), msg("t1", "a1", "toolResult", text("out"), ""), msg("u2", "t1", "user", text("Use Bun."), "")}, ""},
		{"latest assistant decides", []string{msg("a1", "m0", "assistant", text(q), "stop"), msg("t1", "a1", "toolResult", text("x"), ""), msg("a2", "t1", "assistant", text("All done."), "stop")}, ""},
		{"no assistant yet", []string{msg("u1", "m0", "user", text("hi"), "")}, ""},
		// Two processes on one file (pi-agent.md §5.1): the leaf is the
		// last line, on the branch that ends there.
		{"branch of the last line", []string{msg("a1", "m0", "assistant", text(q), "stop"), msg("u2", "a1", "user", text("B answers"), ""), msg("a3", "u2", "assistant", text("ok"), "stop"), msg("a4", "a1", "assistant", text("still?\n:input_needed:"), "stop")}, "a4"},
		{"unparsable lines are skipped", []string{msg("a1", "m0", "assistant", text(q), "stop"), `{"type":"message","id":"u9","parentId":"a1","message":{"role":"user"`, "garbage"}, "a1"},
		{"missing parent ends the branch", []string{msg("u1", "m0", "user", text("hi"), ""), msg("a1", "zz", "assistant", text("x"), "stop")}, ""},
		{"a cycle does not hang", []string{msg("a1", "a2", "assistant", text("x"), "stop"), msg("a2", "a1", "user", text("y"), "")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocked, id := treeOf(t, append(append([]string{}, base...), tt.lines...)...).Blocked()
			if blocked != (tt.want != "") || id != tt.want {
				t.Fatalf("Blocked() = %v %q, want %q", blocked, id, tt.want)
			}
		})
	}
}

func TestParseLine(t *testing.T) {
	e, err := ParseLine([]byte(header("/home/dev/proj")))
	if err != nil || e.Type != "session" || e.Cwd != "/home/dev/proj" {
		t.Fatalf("header: %+v %v", e, err)
	}
	e, err = ParseLine([]byte(msg("a1", "u1", "assistant", text("x\n:input_needed:"), "stop") + "\r\n"))
	if err != nil || e.ID != "a1" || e.ParentID != "u1" || e.Role != "assistant" || !e.Marker || e.StopReason != "stop" {
		t.Fatalf("assistant: %+v %v", e, err)
	}
	for _, bad := range []string{"", "  ", "[]", "null", `{"id":"x"}`, `{"type":"message","id":"x"}`, `{"type":"message","id":"x","message":{}}`, `{"type":"model_change"}`, "{", `{"type":1}`} {
		if e, err := ParseLine([]byte(bad)); err == nil {
			t.Errorf("ParseLine(%q) = %+v, want an error", bad, e)
		}
	}
}

// sink records sentinel reports.
type sink struct {
	mu  sync.Mutex
	got []Sentinel
	ch  chan Sentinel
}

func newSink() *sink { return &sink{ch: make(chan Sentinel, 64)} }

func (s *sink) SessionSentinel(x Sentinel) {
	s.mu.Lock()
	s.got = append(s.got, x)
	s.mu.Unlock()
	s.ch <- x
}

func (s *sink) SessionRetryPending(bool) {}

func (s *sink) next(t *testing.T) Sentinel {
	t.Helper()
	select {
	case x := <-s.ch:
		return x
	case <-time.After(5 * time.Second):
		t.Fatal("no sentinel report within 5s")
		return Sentinel{}
	}
}

func (s *sink) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case x := <-s.ch:
		t.Fatalf("unexpected report %+v", x)
	case <-time.After(d):
	}
}

func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

const reply = "Which file should I edit?\n:input_needed:"

func TestWatcherFollowsAppendsAndSwitches(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond})
	defer w.Close()
	w.Follow(a) // named before Pi wrote it (lazy write)
	s.none(t, 50*time.Millisecond)

	// The first reply ends: Pi writes everything at once.
	appendLines(t, a, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	if got := s.next(t); got != (Sentinel{Open: true, File: a, EntryID: "a1", Old: true}) {
		t.Fatalf("after the marker reply: %+v", got)
	}
	// The user answers: closed.
	appendLines(t, a, msg("u2", "a1", "user", text("main.go"), ""))
	if got := s.next(t); got.Open {
		t.Fatalf("after the answer: %+v", got)
	}
	// A half-written line is held until its newline.
	line := msg("a2", "u2", "assistant", text(reply), "stop")
	f, _ := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0o600)
	f.WriteString(line[:40])
	s.none(t, 50*time.Millisecond)
	f.WriteString(line[40:] + "\n")
	f.Close()
	if got := s.next(t); !got.Open || got.EntryID != "a2" {
		t.Fatalf("after the split line: %+v", got)
	}
	// /new: the probe names a fresh file with no marker: closed.
	appendLines(t, b, header(dir), msg("u1", "", "user", text("new"), ""), msg("a1", "u1", "assistant", text("Hello."), "stop"))
	w.Follow(b)
	if got := s.next(t); got.Open || got.File != b {
		t.Fatalf("after switching files: %+v", got)
	}
	// /resume back to the blocked file: open again, nothing new written.
	w.Follow(a)
	if got := s.next(t); !got.Open || got.File != a || got.EntryID != "a2" {
		t.Fatalf("after resuming the blocked file: %+v", got)
	}
	// Pi rewrites an invalid file from scratch (§5.3): start over.
	if err := os.WriteFile(a, []byte(header(dir)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := s.next(t); got.Open {
		t.Fatalf("after truncation: %+v", got)
	}
}

// Restore after a restart of Pi or of herdr-pi (§20): a watcher that starts
// on an existing file reports an unanswered marker at once, and nothing when
// a later user message answered it.
func TestWatcherRestoresOnStart(t *testing.T) {
	dir := t.TempDir()
	blocked := filepath.Join(dir, "blocked.jsonl")
	answered := filepath.Join(dir, "answered.jsonl")
	appendLines(t, blocked, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	appendLines(t, answered, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"), msg("u2", "a1", "user", text("Use Bun."), ""))

	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond, Locator: Locator{Path: blocked}})
	if got := s.next(t); !got.Open || got.EntryID != "a1" {
		t.Fatalf("restore: %+v", got)
	}
	w.Close()

	s = newSink()
	w = Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond, Locator: Locator{Path: answered}})
	s.none(t, 100*time.Millisecond)
	w.Close()
}

// A reply that ends with the marker and hands over to tools: in a file Pi
// left before the watcher looked, its run is over (Pi was killed, or the
// run aborted mid-tool), and it is restored as blocked like any other
// (§20), until the user answers; entries Pi appends meanwhile (a model
// change, a label) do not undo that. Written while the watcher reads, it is
// the middle of a run — its tool about to answer — and blocks nothing.
func TestWatcherRestoresAHandOverButNotMidRun(t *testing.T) {
	dir := t.TempDir()
	left := filepath.Join(dir, "left.jsonl")
	appendLines(t, left, header(dir), msg("u1", "", "user", text("hi"), ""),
		msg("a1", "u1", "assistant", handOver(reply), "toolUse"), msg("t1", "a1", "toolResult", text("out"), ""))
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(left, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond, Locator: Locator{Path: left}})
	if got := s.next(t); !got.Open || got.EntryID != "a1" {
		t.Fatalf("restore: %+v", got)
	}
	appendLines(t, left, other("l1", "t1", "label"), `{"type":"model_change","id":"m1","parentId":"l1","provider":"fake","modelId":"other"}`)
	s.none(t, 100*time.Millisecond)
	appendLines(t, left, msg("u2", "m1", "user", text("Use Bun."), ""))
	if got := s.next(t); got.Open {
		t.Fatalf("after the answer: %+v", got)
	}
	w.Close()

	// The same lines written while the watcher reads: Pi's first reply of
	// a new session is a hand-over (lazy write puts it all on disk at once),
	// then the tool's result and the run's last reply.
	live := filepath.Join(dir, "live.jsonl")
	s = newSink()
	w = Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond})
	defer w.Close()
	w.Follow(live)
	s.none(t, 50*time.Millisecond)
	appendLines(t, live, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", handOver(reply), "toolUse"))
	s.none(t, 100*time.Millisecond)
	appendLines(t, live, msg("t1", "a1", "toolResult", text("out"), ""))
	s.none(t, 100*time.Millisecond)
	appendLines(t, live, msg("a2", "t1", "assistant", text(reply), "stop"))
	if got := s.next(t); !got.Open || got.EntryID != "a2" {
		t.Fatalf("the run's last reply: %+v", got)
	}

	// A file the locator finds already written, but not before the watcher
	// looked (a new session's first reply): read as it is written.
	found := filepath.Join(dir, "found.jsonl")
	appendLines(t, found, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", handOver(reply), "toolUse"))
	soon := time.Now().Add(time.Second)
	if err := os.Chtimes(found, soon, soon); err != nil {
		t.Fatal(err)
	}
	s2 := newSink()
	w2 := Watch(WatchConfig{Sink: s2, Interval: 10 * time.Millisecond, Locator: Locator{Path: found}})
	defer w2.Close()
	s2.none(t, 100*time.Millisecond)
}

// OnFile hears each file the watcher starts reading — found by the
// locator or named by Follow — once, and before anything read from it
// reaches the sink (wrap sets Herdr's resume command and `status` from it,
// also without the probe).
func TestWatcherNamesEachFileItReads(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	appendLines(t, a, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	appendLines(t, b, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	var mu sync.Mutex
	var seen []string
	note := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond, Locator: Locator{Path: a},
		OnFile: func(p string) { note("file " + filepath.Base(p)) }})
	defer w.Close()
	report := func() { note("open " + filepath.Base(s.next(t).File)) }
	report() // the locator's file
	w.Follow(b)
	report()
	w.Follow(b) // the same file again: nothing new
	s.none(t, 50*time.Millisecond)
	w.Follow(a)
	report()
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(seen, ", "); got != "file a.jsonl, open a.jsonl, file b.jsonl, open b.jsonl, file a.jsonl, open a.jsonl" {
		t.Fatalf("OnFile and the sink heard: %s", got)
	}
}

func TestSessionDirAndLocate(t *testing.T) {
	if got := SessionDir("/a", "/home/dev/proj"); got != "/a/sessions/--home-dev-proj--" {
		t.Errorf("SessionDir = %s", got)
	}
	if got := SessionDir("/a", "/w/my.proj:x"); got != "/a/sessions/--w-my.proj-x--" {
		t.Errorf("SessionDir keeps dots, replaces colons: %s", got)
	}
	root := t.TempDir()
	paths := settings.Paths{Home: "/home/u", PiAgentDir: filepath.Join(root, "agent")}
	now := time.Now()
	parse := func(s string) settings.PiArgs { return settings.ParsePiArgs(strings.Fields(s)) }

	l := Locate(parse(""), settings.Env{}, paths, "/proj", now)
	if l.Dir != filepath.Join(root, "agent/sessions/--proj--") || l.Cwd != "" || !l.Since.Equal(now) {
		t.Errorf("default: %+v", l)
	}
	if l := Locate(parse("-c"), settings.Env{}, paths, "/proj", now); !l.Since.IsZero() {
		t.Errorf("-c must accept the newest existing file: %+v", l)
	}
	if l := Locate(parse("--session rel/s.jsonl"), settings.Env{}, paths, "/proj", now); l.Path != "/proj/rel/s.jsonl" {
		t.Errorf("--session path: %+v", l)
	}
	if l := Locate(parse("--session ~/s.jsonl"), settings.Env{}, paths, "/proj", now); l.Path != "/home/u/s.jsonl" {
		t.Errorf("--session ~ path: %+v", l)
	}
	if l := Locate(parse("--session 01a2"), settings.Env{}, paths, "/proj", now); l.Prefix != "01a2" || !l.Since.IsZero() {
		t.Errorf("--session id: %+v", l)
	}
	if l := Locate(parse("--no-session"), settings.Env{}, paths, "/proj", now); !l.None {
		t.Errorf("--no-session: %+v", l)
	}
	// Overrides: --session-dir > PI_CODING_AGENT_SESSION_DIR > settings.json.
	os.MkdirAll(paths.PiAgentDir, 0o700)
	os.WriteFile(filepath.Join(paths.PiAgentDir, "settings.json"), []byte(`{"sessionDir":"~/from-settings"}`), 0o600)
	env := settings.Env{"PI_CODING_AGENT_SESSION_DIR": "/from-env"}
	if l := Locate(parse("--session-dir flag"), env, paths, "/proj", now); l.Dir != "/proj/flag" || l.Cwd != "/proj" {
		t.Errorf("--session-dir: %+v", l)
	}
	if l := Locate(parse(""), env, paths, "/proj", now); l.Dir != "/from-env" {
		t.Errorf("env override: %+v", l)
	}
	if l := Locate(parse(""), settings.Env{}, paths, "/proj", now); l.Dir != "/home/u/from-settings" {
		t.Errorf("settings override: %+v", l)
	}
}

func TestLocatorFind(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "2026-01-01T00-00-00-000Z_01aaaaaa-0000-7000-8000-000000000000.jsonl")
	other := filepath.Join(dir, "2026-01-02T00-00-00-000Z_01bbbbbb-0000-7000-8000-000000000000.jsonl")
	appendLines(t, old, header("/proj"))
	appendLines(t, other, header("/elsewhere"))
	past := time.Now().Add(-time.Hour)
	os.Chtimes(old, past, past)
	os.Chtimes(other, past.Add(time.Minute), past.Add(time.Minute))

	if p, ok := (Locator{Dir: dir}).Find(); !ok || p != other {
		t.Errorf("newest: %s %v", p, ok)
	}
	if p, ok := (Locator{Dir: dir, Cwd: "/proj"}).Find(); !ok || p != old {
		t.Errorf("newest of this project in a flat dir: %s %v", p, ok)
	}
	if p, ok := (Locator{Dir: dir, Prefix: "01aa"}).Find(); !ok || p != old {
		t.Errorf("by id prefix: %s %v", p, ok)
	}
	started := time.Now()
	if p, ok := (Locator{Dir: dir, Since: started}).Find(); ok {
		t.Errorf("a new run picked an old file: %s", p)
	}
	fresh := filepath.Join(dir, "2026-01-03T00-00-00-000Z_01cccccc-0000-7000-8000-000000000000.jsonl")
	appendLines(t, fresh, header("/proj"))
	if p, ok := (Locator{Dir: dir, Since: started}).Find(); !ok || p != fresh {
		t.Errorf("the new run's file: %s %v", p, ok)
	}
	// Another pane's Pi in the project writes the newest file; its probe
	// named it, so it is not this Pi's, which has written none yet.
	taken := func(path string) bool { return path == fresh }
	if p, ok := (Locator{Dir: dir, Since: started, Taken: taken}).Find(); ok {
		t.Errorf("took another running Pi's file: %s", p)
	}
	if p, ok := (Locator{Dir: dir, Taken: taken}).Find(); !ok || p != other {
		t.Errorf("the newest file no other Pi writes: %s %v", p, ok)
	}
	if _, ok := (Locator{None: true, Dir: dir}).Find(); ok {
		t.Error("--no-session found a file")
	}
	if _, ok := (Locator{Dir: filepath.Join(dir, "missing")}).Find(); ok {
		t.Error("a missing dir found a file")
	}
}

// Pi's settings.json is read like every settings file: a FIFO there (no
// writer, so a blocking open never returns) or /dev/zero says nothing
// instead of hanging the wrapper.
func TestLocateIgnoresASettingsJSONThatIsNotAFile(t *testing.T) {
	paths := settings.Paths{Home: "/home/u", PiAgentDir: t.TempDir()}
	path := filepath.Join(paths.PiAgentDir, "settings.json")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	want := SessionDir(paths.PiAgentDir, "/proj")
	if l := Locate(settings.PiArgs{}, settings.Env{}, paths, "/proj", time.Now()); l.Dir != want {
		t.Fatalf("FIFO settings.json: %+v, want the per-project directory", l)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	if l := Locate(settings.PiArgs{}, settings.Env{}, paths, "/proj", time.Now()); l.Dir != want {
		t.Fatalf("/dev/zero settings.json: %+v, want the per-project directory", l)
	}
}

// With a tick that never comes, the directory watch alone reads what Pi
// appends: the marker reply, the answer, a replacement of the file, and —
// while no file is named — a new session file the locator then finds.
func TestWatcherReadsAppendsWithoutWaitingForItsTick(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: time.Hour, Locator: Locator{Dir: dir}})
	defer w.Close()
	if w.dir == nil {
		t.Fatal("no inotify here: the watcher would wait for its tick")
	}
	// The locator finds the first session file Pi creates.
	appendLines(t, a, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	if got := s.next(t); !got.Open || got.File != a {
		t.Fatalf("after the marker reply in a new file: %+v", got)
	}
	// The probe names it; the answer is read at once.
	w.Follow(a)
	appendLines(t, a, msg("u2", "a1", "user", text("main.go"), ""))
	if got := s.next(t); got.Open {
		t.Fatalf("after the answer: %+v", got)
	}
	// Another session file in the same directory changes nothing.
	appendLines(t, filepath.Join(dir, "other.jsonl"), header(dir), msg("u1", "", "user", text("x"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	s.none(t, 100*time.Millisecond)
	// Pi replaces the file (write to a temporary name, rename over it).
	tmp := filepath.Join(dir, ".a.tmp")
	appendLines(t, tmp, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a9", "u1", "assistant", text(reply), "stop"))
	if err := os.Rename(tmp, a); err != nil {
		t.Fatal(err)
	}
	if got := s.next(t); !got.Open || got.EntryID != "a9" {
		t.Fatalf("after the file was replaced: %+v", got)
	}
}

// A directory that does not exist yet (Pi makes it with the first session)
// is watched from the first tick that finds it.
func TestWatcherWatchesADirectoryCreatedLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions", "--proj--")
	a := filepath.Join(dir, "a.jsonl")
	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: 20 * time.Millisecond})
	defer w.Close()
	w.Follow(a)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	appendLines(t, a, header(dir), msg("u1", "", "user", text("hi"), ""))
	// Wait until a tick has put the watch on the new directory.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		w.dir.mu.Lock()
		watching := w.dir.dir == dir && w.dir.wd >= 0
		w.dir.mu.Unlock()
		if watching {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new directory was never watched")
		}
	}
	appendLines(t, a, msg("a1", "u1", "assistant", text(reply), "stop"))
	if got := s.next(t); !got.Open {
		t.Fatalf("after the marker reply: %+v", got)
	}
}

// A panic in the watcher's goroutine (here the sink's, on the first
// report) is logged and ends the watching; Close still returns. Escaping,
// it would kill the wrapper with the user's terminal raw and the run's
// socket and files left behind (the test binary dies instead of failing).
func TestWatcherPanicIsContained(t *testing.T) {
	dir := t.TempDir()
	blocked := filepath.Join(dir, "blocked.jsonl")
	appendLines(t, blocked, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	logged := make(chan string, 1)
	w := Watch(WatchConfig{Sink: panicSink{}, Interval: 10 * time.Millisecond, Locator: Locator{Path: blocked},
		Logf: func(f string, a ...any) {
			// Other lines (no inotify, say) are not what this waits for.
			if line := fmt.Sprintf(f, a...); strings.Contains(line, "the watcher panicked") {
				select {
				case logged <- line:
				default:
				}
			}
		}})
	defer w.Close()
	select {
	case <-logged:
	case <-time.After(10 * time.Second):
		t.Fatal("no log line for the panic")
	}
}

type panicSink struct{}

func (panicSink) SessionSentinel(Sentinel) { panic("sink boom") }
func (panicSink) SessionRetryPending(bool) { panic("sink boom") }

// A followed file that goes away (the session was deleted) waits for
// nothing any more: the sentinel it reported closes.
func TestWatcherForgetsADeletedFile(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	appendLines(t, a, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond})
	defer w.Close()
	w.Follow(a)
	if got := s.next(t); !got.Open {
		t.Fatalf("before the delete: %+v", got)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if got := s.next(t); got.Open || got.File != a {
		t.Fatalf("after the delete: %+v", got)
	}
}

// A file replaced while the watcher reads it is read as Pi writes it: a
// hand-over to tools at its end is the middle of a run, as in a file that
// grows, not a past session's question.
func TestWatcherReadsAReplacedFileAsWritten(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	appendLines(t, a, header(dir), msg("u1", "", "user", text("hi"), ""))
	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond})
	defer w.Close()
	w.Follow(a)
	s.none(t, 50*time.Millisecond)
	tmp := filepath.Join(dir, "a.tmp")
	appendLines(t, tmp, header(dir), msg("u1", "", "user", text("hi"), ""),
		msg("a1", "u1", "assistant", handOver(reply), "toolUse"))
	if err := os.Rename(tmp, a); err != nil {
		t.Fatal(err)
	}
	s.none(t, 200*time.Millisecond)
}

// omit is the context_edit Pi 1.6.0 writes to leave the entry target out of
// what the model sees again (replacement null): it does so for a reply it
// is about to retry, and for one that overflowed the context before it
// compacts.
func omit(id, parent, target string) string {
	return fmt.Sprintf(`{"type":"context_edit","id":%q,"parentId":%q,"timestamp":"t","targetId":%q,"replacement":null}`, id, parent, target)
}

func errorReply(id, parent string) string {
	return msg(id, parent, "assistant", []any{}, "error")
}

// The retry rule: the branch ends in a reply that failed and that Pi left
// out to retry it, with no retry after it — which, at the end of a run,
// is a retry the person cancelled on its countdown.
func TestRetryPendingRuleOnBranches(t *testing.T) {
	base := []string{header("/p"), msg("u1", "", "user", text("FAIL please"), "")}
	tests := []struct {
		name  string
		lines []string
		want  string // the failed reply's id, "" for none
	}{
		{"a retry scheduled, none followed", []string{errorReply("a1", "u1"), omit("e1", "a1", "a1")}, "a1"},
		// Pi writes the countdown's edit, then the session's name or a
		// label may follow: not messages, passed over.
		{"entries that are no messages come after", []string{errorReply("a1", "u1"), omit("e1", "a1", "a1"), other("l1", "e1", "label")}, "a1"},
		// The retries ran out ("Retry failed after 3 attempts"): the last
		// attempt is not left out.
		{"retries ran out", []string{errorReply("a1", "u1"), omit("e1", "a1", "a1"), errorReply("a2", "e1"), omit("e2", "a2", "a2"), errorReply("a3", "e2")}, ""},
		{"a retry that succeeded", []string{errorReply("a1", "u1"), omit("e1", "a1", "a1"), msg("a2", "e1", "assistant", text("Done."), "stop")}, ""},
		{"a retry still failing, its own retry scheduled", []string{errorReply("a1", "u1"), omit("e1", "a1", "a1"), errorReply("a2", "e1"), omit("e2", "a2", "a2")}, "a2"},
		{"a failure Pi does not retry", []string{errorReply("a1", "u1")}, ""},
		{"an edit that replaces the reply is no omission", []string{errorReply("a1", "u1"),
			`{"type":"context_edit","id":"e1","parentId":"a1","timestamp":"t","targetId":"a1","replacement":{"content":[{"type":"text","text":"x"}]}}`}, ""},
		{"an edit without a replacement field is no omission", []string{errorReply("a1", "u1"), `{"type":"context_edit","id":"e1","parentId":"a1","timestamp":"t","targetId":"a1"}`}, ""},
		{"another entry left out", []string{errorReply("a1", "u1"), omit("e1", "a1", "u1")}, ""},
		{"a reply that did not fail", []string{msg("a1", "u1", "assistant", text("Done."), "stop"), omit("e1", "a1", "a1")}, ""},
		{"the person wrote after the cancelled retry", []string{errorReply("a1", "u1"), omit("e1", "a1", "a1"), msg("u2", "e1", "user", text("again"), "")}, ""},
		// The edit is on the branch that ends at the last line only.
		{"the edit on another branch", []string{errorReply("a1", "u1"), omit("e1", "a1", "a1"), errorReply("a2", "u1")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pending, id := treeOf(t, append(append([]string{}, base...), tt.lines...)...).RetryPending()
			if pending != (tt.want != "") || id != tt.want {
				t.Fatalf("RetryPending() = %v %q, want %q", pending, id, tt.want)
			}
		})
	}
}

// retrySink records the retry reports beside the sentinel's.
type retrySink struct {
	*sink
	retries chan bool
}

func (s *retrySink) SessionRetryPending(pending bool) { s.retries <- pending }

func (s *retrySink) nextRetry(t *testing.T) bool {
	t.Helper()
	select {
	case x := <-s.retries:
		return x
	case <-time.After(5 * time.Second):
		t.Fatal("no retry report within 5s")
		return false
	}
}

func (s *retrySink) noRetry(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case x := <-s.retries:
		t.Fatalf("unexpected retry report %v", x)
	case <-time.After(d):
	}
}

// The watcher tells whether the branch ends in a retry Pi left pending, as
// it tells the sentinel: the first read of a file only when it does, then
// each change; a new file that does not says so when the last one did.
func TestWatcherReportsARetryLeftPending(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	appendLines(t, a, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text("Hello."), "stop"))
	s := &retrySink{sink: newSink(), retries: make(chan bool, 64)}
	w := Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond})
	defer w.Close()
	w.Follow(a)
	s.noRetry(t, 100*time.Millisecond)

	appendLines(t, a, msg("u2", "a1", "user", text("FAIL please"), ""), errorReply("a2", "u2"), omit("e2", "a2", "a2"))
	if !s.nextRetry(t) {
		t.Fatal("the retry's countdown: not reported pending")
	}
	appendLines(t, a, other("l1", "e2", "label")) // no change: nothing said
	s.noRetry(t, 100*time.Millisecond)
	appendLines(t, a, errorReply("a3", "l1")) // the retry ran, and failed for good
	if s.nextRetry(t) {
		t.Fatal("the last retry's failure: reported pending")
	}
	appendLines(t, a, msg("u3", "a3", "user", text("FAIL again"), ""), errorReply("a4", "u3"), omit("e4", "a4", "a4"))
	if !s.nextRetry(t) {
		t.Fatal("the second countdown: not reported pending")
	}
	// /new: a fresh file with no retry; then /resume back.
	appendLines(t, b, header(dir), msg("u1", "", "user", text("new"), ""))
	w.Follow(b)
	if s.nextRetry(t) {
		t.Fatal("the new file: reported pending")
	}
	w.Follow(a)
	if !s.nextRetry(t) {
		t.Fatal("back to the first file: not reported pending")
	}
	s.sink.mu.Lock()
	defer s.sink.mu.Unlock()
	if len(s.sink.got) != 0 {
		t.Fatalf("sentinel reports %+v, want none", s.sink.got)
	}
}

// Another reply that asks while the last one still asks (an extension's
// message in between, which the rule passes over) is reported: the file
// says open as before, but for another reply — a new question. The same
// reply asking still is not.
func TestWatcherReportsAnotherReplyThatAsks(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond})
	defer w.Close()
	w.Follow(a)
	appendLines(t, a, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	if got := s.next(t); got != (Sentinel{Open: true, File: a, EntryID: "a1", Old: true}) {
		t.Fatalf("the first question: %+v", got)
	}
	appendLines(t, a, `{"type":"custom_message","id":"c1","parentId":"a1","timestamp":"t","customType":"x","content":"go on","display":true}`)
	s.none(t, 100*time.Millisecond)
	appendLines(t, a, msg("a2", "c1", "assistant", text(reply), "stop"))
	if got := s.next(t); got != (Sentinel{Open: true, File: a, EntryID: "a2", Old: true}) {
		t.Fatalf("the second question: %+v", got)
	}
}

// A reply Pi makes while the watcher looks is Live, by the entry's own
// time; one from before — in a file Pi wrote before, or copied into a new
// file (a fork) — is not, nor is one without a time. A timestamp that is
// not a string leaves the line an entry.
func TestWatcherSaysWhetherTheQuestionIsLive(t *testing.T) {
	dir := t.TempDir()
	stamped := func(line string, when time.Time) string {
		return strings.Replace(line, `"2026-11-29T13:58:36.026Z"`, `"`+when.UTC().Format(time.RFC3339Nano)+`"`, 1)
	}
	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond})
	defer w.Close()

	copied := filepath.Join(dir, "fork.jsonl")
	w.Follow(copied)
	appendLines(t, copied, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	if got := s.next(t); !got.Open || got.Live {
		t.Fatalf("a copied question: %+v", got)
	}
	appendLines(t, copied, stamped(msg("u2", "a1", "user", text("main.go"), ""), time.Now()))
	if got := s.next(t); got.Open {
		t.Fatalf("after the answer: %+v", got)
	}
	appendLines(t, copied, stamped(msg("a2", "u2", "assistant", text(reply), "stop"), time.Now()))
	if got := s.next(t); !got.Open || !got.Live || got.EntryID != "a2" {
		t.Fatalf("a question asked now: %+v", got)
	}
	appendLines(t, copied, `{"type":"custom_message","id":"c1","parentId":"a2","timestamp":7,"customType":"x","content":"go on","display":true}`,
		strings.Replace(msg("a3", "c1", "assistant", text(reply), "stop"), `"timestamp":"2026-11-29T13:58:36.026Z",`, "", 1))
	if got := s.next(t); !got.Open || got.Live || got.EntryID != "a3" {
		t.Fatalf("a question with no time, after a line with a time that is no string: %+v", got)
	}
}

// Two Pis on one session file (`pi -c` in two panes; pi-agent.md §5.1):
// each appends from its own leaf. Both start at a1, which asks. The other
// Pi's person answers it there (b1) and its reply asks again (b2); then
// this pane's person answers (u2) and this Pi's reply asks (a3). Pinned to
// this Pi's leaf, the watcher follows this Pi's chain only, and only while
// this Pi runs: the other's answer does not answer this pane's question,
// nor does the other's question open one here; this Pi's own answer and
// question do.
func TestPinnedWatcherFollowsItsOwnPiOnly(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	appendLines(t, a, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond})
	defer w.Close()
	w.Follow(a)
	w.Pin("a1", false) // session_start: this Pi's leaf
	if got := s.next(t); got != (Sentinel{Open: true, File: a, EntryID: "a1", Old: true}) {
		t.Fatalf("restored: %+v", got)
	}
	// The other Pi answers a1 and asks: none of it is this Pi's.
	appendLines(t, a, msg("b1", "a1", "user", text("from the other pane"), ""))
	s.none(t, 100*time.Millisecond)
	appendLines(t, a, msg("b2", "b1", "assistant", text("Other question?\n:input_needed:"), "stop"))
	s.none(t, 100*time.Millisecond)

	// This Pi's run: its answer hangs off its own leaf, a1.
	w.Pin("a1", true) // agent_start
	appendLines(t, a, msg("u2", "a1", "user", text("from this pane"), ""))
	if got := s.next(t); got.Open {
		t.Fatalf("after this pane's answer: %+v", got)
	}
	// The other Pi writes on in the middle of this Pi's run.
	appendLines(t, a, msg("b3", "b2", "user", text("other again"), ""), msg("b4", "b3", "assistant", text("Third?\n:input_needed:"), "stop"))
	s.none(t, 100*time.Millisecond)
	appendLines(t, a, msg("a3", "u2", "assistant", text(reply), "stop"))
	if got := s.next(t); got != (Sentinel{Open: true, File: a, EntryID: "a3", Old: true}) {
		t.Fatalf("this Pi's question: %+v", got)
	}
	w.Pin("a3", false) // agent_settled
	// The other pane's answer to its own question changes nothing here.
	appendLines(t, a, msg("b5", "b4", "user", text("answer there"), ""))
	s.none(t, 100*time.Millisecond)
	// /tree in this Pi to an entry before the question: answered, no run.
	w.Pin("u1", false)
	if got := s.next(t); got.Open {
		t.Fatalf("after moving to another branch: %+v", got)
	}
}

// Unpinned, the watcher keeps the last-line rule (no probe, an old one, or
// before its session_start): the file's last entry line is the leaf.
func TestUnpinnedTreeTakesTheLastLine(t *testing.T) {
	tr := treeOf(t, header("/p"), msg("a1", "", "assistant", text(reply), "stop"), msg("b1", "a1", "user", text("other"), ""))
	if blocked, _ := tr.Blocked(); blocked {
		t.Fatal("unpinned: the last line answers")
	}
	tr.Pin("a1", false)
	if blocked, id := tr.Blocked(); !blocked || id != "a1" {
		t.Fatalf("pinned to a1: %v %q", blocked, id)
	}
	// An empty session pinned at its root (getLeafId null): following,
	// its first entry is this Pi's.
	tr = NewTree()
	tr.Pin("", true)
	for _, l := range []string{msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop")} {
		e, _ := ParseLine([]byte(l))
		tr.Add(e)
	}
	if blocked, id := tr.Blocked(); !blocked || id != "a1" {
		t.Fatalf("new session followed from its root: %v %q", blocked, id)
	}
}

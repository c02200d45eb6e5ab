package session

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// longSession writes a session of turns (a user prompt, a tool call, its
// result of about resultSize bytes, a reply) to a file in dir, as a long
// Pi session looks: most of its bytes are tool results. The last reply
// asks (ends with the marker) when asks. It returns the file and the id
// of the last reply.
func longSession(t testing.TB, dir string, turns, resultSize int, asks bool) (string, string) {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("long-%d-%d-%v.jsonl", turns, resultSize, asks))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, header(dir))
	result := strings.Repeat("src/main.go:12: func main() { fmt.Println(\"x\") }\n", resultSize/52+1)
	parent, last := "", ""
	for i := range turns {
		u, a, r, b := fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i), fmt.Sprintf("r%d", i), fmt.Sprintf("b%d", i)
		reply := "Done with step " + u + "."
		if asks && i == turns-1 {
			reply = "Which file next?\n:input_needed:"
		}
		fmt.Fprintln(w, msg(u, parent, "user", text("Go on with step "+u), ""))
		fmt.Fprintln(w, msg(a, u, "assistant", handOver("Let me look."), "toolUse"))
		fmt.Fprintln(w, msg(r, a, "toolResult", text(result), ""))
		fmt.Fprintln(w, msg(b, r, "assistant", text(reply), "stop"))
		parent, last = b, b
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, last
}

// The first read of a 64 MiB session, of which the sentinel rule needs the
// last few entries (go test -run '^$' -bench FirstRead ./pane/session/).
func BenchmarkFirstReadOfALongSession(b *testing.B) {
	path, last := longSession(b, b.TempDir(), 4000, 16<<10, true)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for range b.N {
		tl := newTail(path, time.Now())
		if _, err := tl.poll(); err != nil {
			b.Fatal(err)
		}
		if _, err := tl.readBack(); err != nil {
			b.Fatal(err)
		}
		if open, id := tl.tree.Blocked(); !open || id != last {
			b.Fatalf("Blocked() = %v %q, want %q", open, id, last)
		}
	}
}

// The first read of a long session takes its end only: the sentinel rule
// decides on the last entries, and a session of hundreds of megabytes took
// seconds to read whole. What it says is what a whole read says.
func TestTheFirstReadOfALongSessionTakesItsEnd(t *testing.T) {
	const turns = 400
	path, last := longSession(t, t.TempDir(), turns, 16<<10, true)
	tl := newTail(path, time.Now())
	if _, err := tl.poll(); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.readBack(); err != nil {
		t.Fatal(err)
	}
	if open, id := tl.tree.Blocked(); !open || id != last {
		t.Fatalf("Blocked() = %v %q, want %q", open, id, last)
	}
	if n := tl.tree.Len(); n >= 4*turns/2 {
		t.Fatalf("the first read parsed %d of the %d entries of a %d-turn session to decide on its last reply", n, 4*turns, turns)
	}
}

// Whatever the window, the tail says what a whole read says: as first
// read, pinned to an old entry (a /tree back), with lines appended, and
// unpinned again.
func TestATailReadFromTheEndSaysWhatAWholeReadSays(t *testing.T) {
	dir := t.TempDir()
	const q = "Which one?\n:input_needed:"
	files := map[string][]string{
		"asks at the end": {header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(q), "stop"),
			msg("u2", "a1", "user", text("this one"), ""), msg("a2", "u2", "assistant", handOver("Let me look."), "toolUse"),
			msg("t2", "a2", "toolResult", text(strings.Repeat("x", 300)), ""), msg("a3", "t2", "assistant", text(q), "stop")},
		"a long tool result after the hand-over that asks": {header(dir), msg("u1", "", "user", text("hi"), ""),
			msg("a1", "u1", "assistant", handOver(q), "toolUse"), msg("t1", "a1", "toolResult", text(strings.Repeat("y", 500)), ""),
			other("l1", "t1", "label"), "garbage"},
		"a retry left pending": {header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", []any{}, "error"),
			`{"type":"context_edit","id":"e1","parentId":"a1","timestamp":"t","targetId":"a1","replacement":null}`},
		"the last line unparsable and long": {header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(q), "stop"),
			`{"type":"message","id":"u9","parentId":"a1","message":{"role":"user"` + strings.Repeat("z", 400)},
		"another Pi's branch last": {header(dir), msg("a1", "", "assistant", text(q), "stop"), msg("u2", "a1", "user", text("B answers"), ""),
			msg("a3", "u2", "assistant", text("ok"), "stop"), msg("a4", "a1", "assistant", text("still?\n:input_needed:"), "stop")},
	}
	appended := []string{msg("u5", "a1", "user", text("later"), ""), msg("a5", "u5", "assistant", text(q), "stop")}
	for name, lines := range files {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".jsonl")
		body := strings.Join(lines, "\n") + "\n"
		for _, window := range windows(body) {
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			since := time.Now()
			whole, end := &tail{path: path, since: since, tree: NewTree()}, newTail(path, since)
			end.window = window
			step := func(what string, f func(tl *tail)) {
				t.Helper()
				for _, tl := range []*tail{whole, end} {
					f(tl)
					if _, err := tl.poll(); err != nil {
						t.Fatal(err)
					}
					if _, err := tl.readBack(); err != nil {
						t.Fatal(err)
					}
				}
				if got, want := says(end.tree, since), says(whole.tree, since); got != want {
					t.Fatalf("%s, window %d, %s: read from the end %s, whole %s", name, window, what, got, want)
				}
			}
			step("first read", func(*tail) {})
			step("pinned to the first reply", func(tl *tail) { tl.setPin(&pin{leaf: "a1", follow: true}) })
			step("lines appended", func(*tail) { appendLines(t, path, appended...) })
			step("unpinned", func(tl *tail) { tl.setPin(nil) })
		}
	}
}

// says is what the watcher reads off a tree.
func says(tr *Tree, since time.Time) string {
	open, id := tr.Blocked()
	retry, rid := tr.RetryPending()
	return fmt.Sprintf("blocked %v %q (live %v, old %v), retry %v %q", open, id, tr.WrittenSince(id, since), tr.WrittenBefore(id, since), retry, rid)
}

// windows are the first-read windows worth trying on body: those that
// begin a byte before, at and after each line's start, every 17th byte
// besides, and one larger than the file.
func windows(body string) []int64 {
	size := int64(len(body))
	var ws []int64
	for i := int64(1); i <= size+1; i += 17 {
		ws = append(ws, i)
	}
	for i, c := range body {
		if c == '\n' {
			for _, w := range []int64{size - int64(i), size - int64(i) - 1, size - int64(i) - 2} {
				if w > 0 {
					ws = append(ws, w)
				}
			}
		}
	}
	return ws
}

// The probe names its Pi's leaf before the wrapper's first read of a new
// file (session_start, then agent_start, pin it as Follow switches
// files), and a running Pi's entries chain on from it. Read from the end,
// the window may leave out the leaf and the entries after it; a whole read
// follows the chain to the end, so the tail must too, else the verdict is
// the pinned entry's, not the reply's: a question missed (the prompt
// pinned, a tool result longer than the window, then the reply that asks),
// or one answered since taken for open.
func TestATailReadFromTheEndPinnedBeforeItsFirstReadSaysWhatAWholeReadSays(t *testing.T) {
	dir := t.TempDir()
	const q = "Which one?\n:input_needed:"
	files := map[string][]string{
		"a long tool result, then the reply that asks": {header(dir), msg("u1", "", "user", text("describe it"), ""),
			msg("a1", "u1", "assistant", handOver("Let me look."), "toolUse"),
			msg("t1", "a1", "toolResult", text(strings.Repeat("i", 600)), ""), msg("a2", "t1", "assistant", text(q), "stop")},
		"a question answered since": {header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", handOver("look"), "toolUse"),
			msg("t1", "a1", "toolResult", text(strings.Repeat("x", 300)), ""), msg("a2", "t1", "assistant", text(q), "stop"),
			msg("u3", "a2", "user", text("this one"), ""), msg("a3", "u3", "assistant", text("ok"), "stop")},
	}
	for name, lines := range files {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".jsonl")
		body := strings.Join(lines, "\n") + "\n"
		for _, leaf := range []string{"u1", "a1", "t1", "a2"} {
			for _, follow := range []bool{true, false} {
				for _, window := range windows(body) {
					if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
						t.Fatal(err)
					}
					since := time.Now()
					whole, end := &tail{path: path, since: since, tree: NewTree()}, newTail(path, since)
					end.window = window
					for _, tl := range []*tail{whole, end} {
						tl.setPin(&pin{leaf: leaf, follow: follow})
						if _, err := tl.poll(); err != nil {
							t.Fatal(err)
						}
						if _, err := tl.readBack(); err != nil {
							t.Fatal(err)
						}
					}
					if got, want := says(end.tree, since), says(whole.tree, since); got != want {
						t.Fatalf("%s, pinned to %s (follow %v) before the first read, window %d: read from the end %s, whole %s", name, leaf, follow, window, got, want)
					}
				}
			}
		}
	}
}

// A session whose last line is longer than the first read's window (a
// command's output of megabytes, written after the reply that asks) gives
// the first read no entry to decide on. Reading further back must stop
// where the rules decide: reading the whole file held every entry of a
// 200 MB session in memory (246 MiB) and took most of a minute.
func TestALastLineLongerThanTheWindowReadsBackOnlyAsFarAsTheRulesNeed(t *testing.T) {
	const turns = 2000
	dir := t.TempDir()
	path, last := longSession(t, dir, turns, 64, true)
	appendLines(t, path, msg("x1", last, "bashExecution", text(strings.Repeat("o", 40<<10)), ""))
	tl := newTail(path, time.Now())
	tl.window = 4 << 10
	if _, err := tl.poll(); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.readBack(); err != nil {
		t.Fatal(err)
	}
	if open, id := tl.tree.Blocked(); !open || id != last {
		t.Fatalf("Blocked() = %v %q, want the last reply %q", open, id, last)
	}
	if n := tl.tree.Len(); n >= turns {
		t.Fatalf("the tree holds %d of the %d entries of a %d-turn session to decide on its last reply, behind one long line", n, 4*turns+1, turns)
	}
}

// allocated is how many bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A tool's output of megabytes is one session line, and only an assistant
// reply's text matters to the rules: parsing any other message must not
// copy its content. Copied twice, a 20 MB tool result appended to a
// watched session took the wrapper from 17 to 111 MiB resident.
func TestParsingALongToolResultDoesNotCopyIt(t *testing.T) {
	for _, role := range []string{"toolResult", "user", "bashExecution"} {
		line := []byte(msg("r1", "a1", role, text(strings.Repeat("z", 8<<20)), ""))
		var e Entry
		var err error
		n := allocated(func() { e, err = ParseLine(line) })
		if err != nil || e.ID != "r1" || e.ParentID != "a1" || e.Role != role {
			t.Fatalf("ParseLine(a long %s) = %+v, %v", role, e, err)
		}
		if n > uint64(len(line))/8 {
			t.Errorf("parsing a %d-byte %s line allocated %d bytes", len(line), role, n)
		}
	}
	// The reply's own text is still read, however long.
	e, err := ParseLine([]byte(msg("a2", "r1", "assistant", text(strings.Repeat("z", 1<<20)+"\n"+Marker), "stop")))
	if err != nil || !e.Marker || e.StopReason != "stop" {
		t.Fatalf("ParseLine(a long reply that asks) = %+v, %v", e, err)
	}
}

// A line of megabytes appended to a watched session (a tool's output) is
// held until its newline, in one buffer of its size: grown by append, 64
// KiB at a time, it cost five times its size, and a 20 MB line took the
// wrapper from 17 to 104 MiB resident. The reply after it still asks.
func TestALongLineAppendedCostsAboutItsSize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	appendLines(t, path, header(dir), msg("u1", "", "user", text("go on"), ""), msg("a1", "u1", "assistant", handOver("Let me look."), "toolUse"))
	tl := newTail(path, time.Now())
	if _, err := tl.poll(); err != nil {
		t.Fatal(err)
	}
	long := msg("r1", "a1", "toolResult", text(strings.Repeat("z", 8<<20)), "")
	appendLines(t, path, long, msg("a2", "r1", "assistant", text(reply), "stop"))
	var err error
	n := allocated(func() { _, err = tl.poll() })
	if err != nil {
		t.Fatal(err)
	}
	if open, id := tl.tree.Blocked(); !open || id != "a2" {
		t.Fatalf("Blocked() = %v %q after the long line, want the reply a2", open, id)
	}
	if n > 2*uint64(len(long)) {
		t.Fatalf("reading a %d-byte line allocated %d bytes", len(long), n)
	}
}

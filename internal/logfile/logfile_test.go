package logfile

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// writerEnv makes the test binary a log writer process (see writerMain).
const writerEnv = "LOGFILE_TEST_WRITER"

func TestMain(m *testing.M) {
	if os.Getenv(writerEnv) != "" {
		os.Exit(writerMain())
	}
	testenv.Main(m)
}

// writerMain writes N numbered lines as writer ID, with its own Logger, as
// every wrapper in every pane does; it starts writing when its stdin closes,
// so all writers start together.
func writerMain() int {
	var id, n, keep int
	var max int64
	fmt.Sscanf(os.Getenv(writerEnv), "%d %d %d %d", &id, &n, &max, &keep)
	l := Open(Options{Dir: os.Getenv("LOGFILE_TEST_DIR"), Tag: "w", MaxBytes: max, Keep: keep})
	defer l.Close()
	_, _ = bufio.NewReader(os.Stdin).ReadByte()
	for i := range n {
		l.Printf("%s", lineText(id, i))
	}
	return 0
}

func lineText(id, seq int) string {
	return fmt.Sprintf("writer=%d seq=%d %s", id, seq, strings.Repeat("x", 60))
}

// runWriters starts k writer processes of n lines each and waits for them.
func runWriters(t *testing.T, dir string, k, n int, max int64, keep int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	var gates []*os.File
	for id := range k {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d %d %d", writerEnv, id, n, max, keep), "LOGFILE_TEST_DIR="+dir)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin, cmd.Stderr = r, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		cmds, gates = append(cmds, cmd), append(gates, w)
	}
	for _, w := range gates {
		w.Close()
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
}

// seqs reads the writers' lines from the given files in order, as
// writer -> sequence numbers in file order; other lines are counted.
func seqs(t *testing.T, files ...string) (map[int][]int, []string) {
	t.Helper()
	got := map[int][]int{}
	var other []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			_, msg, ok := strings.Cut(line, " w: ")
			var id, seq int
			if ok {
				if _, err := fmt.Sscanf(msg, "writer=%d seq=%d", &id, &seq); err == nil {
					got[id] = append(got[id], seq)
					continue
				}
			}
			if line != "" {
				other = append(other, line)
			}
		}
	}
	return got, other
}

// Every wrapper in every pane appends to the one log and rotates it. When
// the log is just under its limit and several processes write at once,
// exactly one of them rotates and no line is lost: the old per-process
// rename had each of them rotate, each rename replacing the last one's
// herdr-pi.log.1.
func TestRotationAcrossProcessesLosesNoLine(t *testing.T) {
	dir := t.TempDir()
	const max, k, n = 32 << 10, 4, 60 // 4×60 lines of ~110 bytes: under one more file
	pre := Open(Options{Dir: dir, Tag: "pre", MaxBytes: max})
	prefilled := 0
	for fi, _ := os.Stat(pre.Path()); fi.Size() < max-2048; fi, _ = os.Stat(pre.Path()) {
		pre.Printf("prefill %d", prefilled)
		prefilled++
	}
	pre.Close()

	runWriters(t, dir, k, n, max, 1)

	log := filepath.Join(dir, DefaultName)
	got, other := seqs(t, log+".1", log)
	if len(other) != prefilled {
		t.Errorf("%d of %d prefill lines left", len(other), prefilled)
	}
	for id := range k {
		if len(got[id]) != n {
			t.Errorf("writer %d: %d of %d lines in the log (%v)", id, len(got[id]), n, got[id])
		}
	}
	if _, err := os.Stat(log + ".1"); err != nil {
		t.Errorf("no rotation happened: %v", err)
	}
}

// With many rotations (and every generation kept), every line is in
// exactly one generation, and each writer's lines run in order from the
// oldest generation to the newest: no process ever appends to a file that
// was already rotated away.
func TestRotationUnderLoadKeepsEveryLineInOrder(t *testing.T) {
	dir := t.TempDir()
	const max, k, n, keep = 4 << 10, 4, 200, 1000
	runWriters(t, dir, k, n, max, keep)

	log := filepath.Join(dir, DefaultName)
	var files []string
	for g := keep; g >= 1; g-- {
		if _, err := os.Stat(log + "." + strconv.Itoa(g)); err == nil {
			files = append(files, log+"."+strconv.Itoa(g))
		}
	}
	if len(files) < 10 {
		t.Fatalf("only %d rotations for %d bytes over a %d-byte limit", len(files), k*n*110, max)
	}
	got, other := seqs(t, append(files, log)...)
	if len(other) > 0 {
		t.Errorf("stray lines: %q", other)
	}
	for id := range k {
		s := got[id]
		if len(s) != n {
			t.Errorf("writer %d: %d of %d lines", id, len(s), n)
			continue
		}
		for i, seq := range s {
			if seq != i {
				t.Errorf("writer %d: line %d is seq %d (out of order or duplicated)", id, i, seq)
				break
			}
		}
	}
}

// Several Loggers in one process (separate fds, as in several wrappers)
// follow the same protocol.
func TestRotationAcrossLoggersInOneProcess(t *testing.T) {
	dir := t.TempDir()
	const max, k, n, keep = 2 << 10, 6, 150, 1000
	var wg sync.WaitGroup
	for id := range k {
		l := Open(Options{Dir: dir, Tag: "w", MaxBytes: max, Keep: keep})
		wg.Go(func() {
			defer l.Close()
			for i := range n {
				l.Printf("%s", lineText(id, i))
			}
		})
	}
	wg.Wait()
	log := filepath.Join(dir, DefaultName)
	files := []string{}
	for g := keep; g >= 1; g-- {
		files = append(files, log+"."+strconv.Itoa(g))
	}
	got, _ := seqs(t, append(files, log)...)
	for id := range k {
		if len(got[id]) != n {
			t.Errorf("writer %d: %d of %d lines", id, len(got[id]), n)
		}
		for i, seq := range got[id] {
			if seq != i {
				t.Fatalf("writer %d: line %d is seq %d", id, i, seq)
			}
		}
	}
}

// Values from the environment and flags (HERDR_PANE_ID, --agent) reach log
// lines; control characters in them are escaped, so they can neither forge
// a line nor put terminal controls into the file.
func TestEveryLineIsEscaped(t *testing.T) {
	dir := t.TempDir()
	l := Open(Options{Dir: dir, Tag: "wrap", Debug: true})
	l.Printf("pane %s agent %s", "w1:p1\n2026-01-01T00:00:00.000Z info pid=1 wrap: FORGED", "pi\x1b]0;title\x07\x1b[2J")
	l.Debugf("bidi %s, bad %s, tab\there, C1 %s, nul %s", "a\u202eb", "\xff\xfe", "\u009b", "\x00")
	l.Close()
	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), data)
	}
	wants := []string{
		` info pid=` + strconv.Itoa(os.Getpid()) + ` wrap: pane w1:p1\n2026-01-01T00:00:00.000Z info pid=1 wrap: FORGED agent pi\x1b]0;title\x07\x1b[2J`,
		` debug pid=` + strconv.Itoa(os.Getpid()) + ` wrap: bidi a\u202eb, bad \xff\xfe, tab\there, C1 \x9b, nul \x00`,
	}
	for i, want := range wants {
		if !strings.HasSuffix(lines[i], want) {
			t.Errorf("line %d:\n got %s\nwant …%s", i+1, lines[i], want)
		}
	}
	for _, c := range data {
		if (c < 0x20 && c != '\n') || c == 0x7f {
			t.Fatalf("raw control byte %#x in the log:\n%q", c, data)
		}
	}
}

func TestLongLinesAreCut(t *testing.T) {
	dir := t.TempDir()
	l := Open(Options{Dir: dir, Tag: "t"})
	l.Printf("%s", strings.Repeat("é", MaxLineBytes)) // 2 bytes each
	l.Close()
	data, _ := os.ReadFile(l.Path())
	if len(data) > MaxLineBytes+200 || !strings.HasSuffix(string(data), "é… (16388 more bytes cut)\n") || strings.Count(string(data), "\n") != 1 {
		t.Fatalf("%d bytes: %.80q … %q", len(data), data, data[max(0, len(data)-60):])
	}
}

func TestFilesArePrivate(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	dir := filepath.Join(t.TempDir(), "state", "herdr-pi")
	l := Open(Options{Dir: dir, Tag: "t"})
	l.Printf("hello")
	l.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, l.Path(): 0o600, l.Path() + ".lock": 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", path, fi.Mode(), err, want)
		}
	}
	// A log left 0644 by something else is closed down again.
	if err := os.Chmod(l.Path(), 0o644); err != nil {
		t.Fatal(err)
	}
	Open(Options{Dir: dir}).Close()
	if fi, _ := os.Stat(l.Path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v after reopening", fi.Mode())
	}
}

// Whatever sits where the log should be, no line goes anywhere but a
// regular file of ours: a symlink (to a terminal, say) is not followed, a
// FIFO does not block, and the lines are dropped.
func TestALogThatIsNotARegularFileDropsLines(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "link.log")); err != nil {
		t.Fatal(err)
	}
	l := Open(Options{Dir: dir, Name: "link.log"})
	l.Printf("must not arrive")
	l.Close()
	if data, _ := os.ReadFile(target); len(data) != 0 {
		t.Fatalf("the log followed a symlink: %q", data)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo.log"), 0o600); err != nil {
		t.Fatal(err)
	}
	l = Open(Options{Dir: dir, Name: "fifo.log"})
	l.Printf("dropped")
	l.Close()
	var nilLogger *Logger
	nilLogger.Printf("nothing")
	nilLogger.Close()
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"plain", "a\nb", "\x1b[31m", "\xff", "a\u202eb", "\u2028", "\U000e0001", "tab\t", `back\slash`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		for _, c := range []byte(e) {
			if c < 0x20 || c == 0x7f {
				t.Fatalf("Escape(%q) = %q keeps byte %#x", s, e, c)
			}
		}
		for _, r := range e {
			if r != ' ' && !strconv.IsPrint(r) {
				t.Fatalf("Escape(%q) = %q keeps rune %U", s, e, r)
			}
		}
		if isPlain(s) && e != s {
			t.Fatalf("Escape changed plain text %q to %q", s, e)
		}
	})
}

func isPlain(s string) bool {
	for _, r := range s {
		if r != ' ' && !strconv.IsPrint(r) {
			return false
		}
	}
	return strings.ToValidUTF8(s, "") == s
}

// A process stopped while it holds the lock (Ctrl-Z stops a wrapper with
// its agent) stalls nobody: lines are still written, and the rotation
// waits until the lock is free again.
func TestAStuckLockHolderStallsNoWriter(t *testing.T) {
	dir := t.TempDir()
	const max = 1 << 10
	l := Open(Options{Dir: dir, Tag: "w", MaxBytes: max})
	defer l.Close()
	stuck, err := os.OpenFile(l.Path()+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if err := unix.Flock(int(stuck.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		l.Printf("%s", lineText(0, i))
	}
	if _, err := os.Stat(l.Path() + ".1"); !os.IsNotExist(err) {
		t.Fatalf("rotated while another process held the lock: %v", err)
	}
	if err := unix.Flock(int(stuck.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	l.Printf("%s", lineText(0, 20))
	if _, err := os.Stat(l.Path() + ".1"); err != nil {
		t.Fatalf("no rotation once the lock was free: %v", err)
	}
	got, _ := seqs(t, l.Path()+".1", l.Path())
	if len(got[0]) != 21 {
		t.Fatalf("%d of 21 lines", len(got[0]))
	}
}

// Without a lock file (it could not be created) a lone process still
// rotates.
func TestRotationWithoutALockFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, DefaultName+".lock"), 0o700); err != nil {
		t.Fatal(err) // a directory in its place: the lock file cannot be opened
	}
	l := Open(Options{Dir: dir, Tag: "w", MaxBytes: 1 << 10, Keep: 10})
	for i := range 30 {
		l.Printf("%s", lineText(0, i))
	}
	l.Close()
	got, _ := seqs(t, l.Path()+".3", l.Path()+".2", l.Path()+".1", l.Path())
	if _, err := os.Stat(l.Path() + ".3"); err != nil || len(got[0]) != 30 {
		t.Fatalf("rotation %v, %d of 30 lines", err, len(got[0]))
	}
	for i, seq := range got[0] {
		if seq != i {
			t.Fatalf("line %d is seq %d", i, seq)
		}
	}
}

// BenchmarkPrintf is the cost of one line: the lock, the inode check, one
// write and the size check.
func BenchmarkPrintf(b *testing.B) {
	l := Open(Options{Dir: b.TempDir(), Tag: "bench", MaxBytes: 1 << 30})
	defer l.Close()
	for b.Loop() {
		l.Printf("state: working -> idle (%s)", "screen")
	}
}

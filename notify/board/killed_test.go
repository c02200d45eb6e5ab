package board

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperWrapper is not a test: it is the wrapper another test runs
// and kills. It joins the board in BOARD_DIR, holds a question, says its
// entry and waits to be killed.
func TestHelperWrapper(t *testing.T) {
	dir := os.Getenv("BOARD_HELPER_DIR")
	if dir == "" {
		return
	}
	b, err := Open(dir, "/h.sock", "w1:p9")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Present("api"); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString(b.Hold("api") + "\n")
	time.Sleep(time.Hour)
}

// A wrapper killed (SIGKILL: no code of its own runs) while Herdr held
// its question back: no other pane's toast names that question any more
// ("also asking: api" sent the person looking for a question no pane
// asks), and its files leave the board, however young they are.
func TestAKilledWrappersQuestionIsNotNamed(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWrapper$")
	cmd.Env = append(os.Environ(), "BOARD_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("the helper wrapper said nothing: %v", err)
	}
	entry := strings.TrimSpace(line)
	b, _ := Open(dir, "/h.sock", "w1:p2")
	if got := b.Others(); !slices.Equal(got, []Held{{Entry: entry, Place: "api"}}) {
		_ = cmd.Process.Kill()
		t.Fatalf("the running wrapper's question: %+v", got)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if got := b.Others(); len(got) != 0 {
		t.Fatalf("a killed wrapper's question is named: %+v", got)
	}
	left, _ := filepath.Glob(filepath.Join(b.dir, "*"))
	if len(left) != 0 {
		t.Fatalf("a killed wrapper's files stay on the board: %q", left)
	}
}

package guard

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A panic is told once, with what failed, what it cost, the value and the
// stack down to the panicking frame; a log that panics in turn loses the
// line, not the process.
func TestRunTellsThePanicAndItsCost(t *testing.T) {
	var lines []string
	logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	if Run(logf, "x: the part", "it is gone", func() {}) {
		t.Fatal("Run said a quiet f panicked")
	}
	if !Run(logf, "x: the part", "it is gone", boom) {
		t.Fatal("Run said a panicking f did not panic")
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "x: the part panicked (it is gone): boom\n") ||
		!strings.Contains(lines[0], "guard.boom") {
		t.Fatalf("logged %q", lines)
	}
	if !Run(func(string, ...any) { panic("log boom") }, "x", "y", boom) || !Run(nil, "x", "y", boom) {
		t.Fatal("a panic with a broken or no log was not recovered")
	}
	var nilPanic []string
	Run(func(f string, a ...any) { nilPanic = append(nilPanic, fmt.Sprintf(f, a...)) }, "x", "y", func() { panic(nil) })
	if len(nilPanic) != 1 {
		t.Fatalf("panic(nil) told %d times", len(nilPanic))
	}
}

// A panicking goroutine started by Go still counts done, so its owner's
// Wait returns.
func TestGoCountsAPanickedGoroutineDone(t *testing.T) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	told := 0
	for range 3 {
		Go(&wg, func(string, ...any) { mu.Lock(); told++; mu.Unlock() }, "x", "y", boom)
	}
	wg.Wait()
	if told != 3 {
		t.Fatalf("told %d panics, want 3", told)
	}
	done := make(chan struct{})
	f := Func(nil, "x", "y", func() { defer close(done); boom() })
	f()
	<-done
}

func boom() { panic("boom") }

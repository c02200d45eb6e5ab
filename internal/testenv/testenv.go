// Package testenv decides what a test does when something it needs from the
// machine is missing (Pi, Node, tmux, script, ../shared): under CI=true the
// test fails, because CI installs everything and a missing part is a broken
// set-up; elsewhere it skips with a sentence that says how to get the part,
// and the package's TestMain prints one summary line of what was skipped.
//
// It also runs every package's TestMain: goleak after the tests, then the
// summary. It must not decide anything about the code under test.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// InCI reports whether the tests run in CI, where nothing may skip.
func InCI() bool { return os.Getenv("CI") == "true" }

var (
	mu      sync.Mutex
	skipped = map[string][]string{} // "what — how" → test names
)

// Missing ends the test because what is absent: a failure under CI=true, a
// skip elsewhere. how says how to get it ("apt-get install tmux").
func Missing(t testing.TB, what, how string) {
	t.Helper()
	msg := what + " is missing: " + how
	if InCI() {
		t.Fatalf("%s (CI=true: a missing prerequisite fails the run)", msg)
	}
	record(t.Name(), msg)
	t.Skip(msg)
}

func record(test, msg string) {
	mu.Lock()
	defer mu.Unlock()
	skipped[msg] = append(skipped[msg], test)
	if path := os.Getenv(SkipLogEnv); path != "" {
		// One line per skip, appended by every package's test binary; the
		// Makefile's test target prints their summary at the very end.
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			fmt.Fprintf(f, "%s\t%s\n", test, msg)
			f.Close()
		}
	}
}

// SkipLogEnv names a file every skip is appended to, so a run over many
// packages can summarise them once (make test does).
const SkipLogEnv = "HERDR_PI_SKIP_LOG"

// Summary is the one line that names what was skipped and how to get it,
// "" when nothing was.
func Summary() string {
	mu.Lock()
	defer mu.Unlock()
	if len(skipped) == 0 {
		return ""
	}
	n := 0
	var parts []string
	for msg, tests := range skipped {
		n += len(tests)
		parts = append(parts, fmt.Sprintf("%s (%d)", msg, len(tests)))
	}
	slices.Sort(parts)
	return fmt.Sprintf("testenv: %d test(s) skipped — %s", n, strings.Join(parts, "; "))
}

// Main runs a package's tests, fails the run if a goroutine outlived them,
// and prints the summary of skips. Use it as the package's TestMain.
func Main(m *testing.M) { os.Exit(Checked(m).Run()) }

// Checked is m with Main's checks after its run, for a TestMain that hands
// m to something else (testscript.Main).
func Checked(m *testing.M) interface{ Run() int } {
	dialMode() // started by DialAsNobody: dial, tell and exit
	return checked{m}
}

// hangupsAsUsual gives the processes the tests start SIGHUP's default
// action even when the tests were started with it ignored (under nohup,
// or a CI runner that ignores it): an ignored signal stays ignored across
// exec, and the tests prove that a hung-up child ends. Handling it here
// is enough — a handled signal reverts to its default on exec. Only the
// test process does so (Run): the same binary run as a command of a test
// script (herdr-pi itself in e2e) keeps what it was started with, as the
// real binary does.
func hangupsAsUsual() {
	if signal.Ignored(syscall.SIGHUP) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	}
}

type checked struct{ m *testing.M }

func (c checked) Run() int {
	hangupsAsUsual()
	code := c.m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	if s := Summary(); s != "" {
		fmt.Fprintln(os.Stderr, s)
	}
	return code
}

// ModuleRoot walks up from the working directory to go.mod.
func ModuleRoot() string {
	dir, _ := os.Getwd()
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return dir
}

// Shared returns ../shared/<rel> beside the module (or beside one of its
// parents), or ends the test through Missing when it is not there.
func Shared(t testing.TB, rel string) string {
	t.Helper()
	if p, ok := FindShared(rel); ok {
		return p
	}
	Missing(t, "../shared/"+rel, "run the tests from a work tree that has the project's shared/ folder beside it")
	return ""
}

// FindShared looks for shared/<rel> beside the module root and its parents.
func FindShared(rel string) (string, bool) {
	for d := ModuleRoot(); ; d = filepath.Dir(d) {
		p := filepath.Join(d, "shared", rel)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
		if d == filepath.Dir(d) {
			return "", false
		}
	}
}

// LookPath returns the path of an executable on PATH, or ends the test
// through Missing.
func LookPath(t testing.TB, name, how string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name, how)
	}
	return p
}

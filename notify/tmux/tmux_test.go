package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/notify/tmux/tmuxtest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestFromEnv(t *testing.T) {
	cases := []struct {
		tmux, pane string
		want       Level
		ok         bool
	}{
		{"/tmp/tmux-1000/default,1234,0", "%3", Level{"/tmp/tmux-1000/default", "%3"}, true},
		{"/tmp/odd,name/s,1234,0", "", Level{"/tmp/odd,name/s", ""}, true},
		{"/tmp/bare", "%1", Level{"/tmp/bare", "%1"}, true},
		{"", "%1", Level{}, false},
		{",1,0", "", Level{}, false},
	}
	for _, c := range cases {
		got, ok := FromEnv(env("TMUX", c.tmux, "TMUX_PANE", c.pane))
		if got != c.want || ok != c.ok {
			t.Errorf("FromEnv(%q) = %+v %v, want %+v %v", c.tmux, got, ok, c.want, c.ok)
		}
	}
}

// scripted answers tmux commands from a table keyed by socket and command.
type scripted map[string]string

func (s scripted) Run(_ context.Context, socket string, args ...string) ([]byte, error) {
	key := socket + " " + strings.Join(args, " ")
	out, ok := s[key]
	if !ok {
		return nil, fmt.Errorf("tmux %s: no server running on %s", strings.Join(args, " "), socket)
	}
	if msg, isErr := strings.CutPrefix(out, "ERR "); isErr {
		return nil, errors.New(msg)
	}
	return []byte(out), nil
}

func writeProc(t *testing.T, root string, pid, ppid int, comm string, env ...string) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("%d (%s) S %d 1 1 0 -1\n", pid, comm, ppid)
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "environ"), []byte(strings.Join(env, "\x00")+"\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The nested-tmux walk over a recorded /proc: the inner client (pid 300)
// was started with TMUX removed by a shell (pid 200, "odd) name" to check
// the stat parser) whose environment names the outer server.
func TestLevelsWalksClientAncestors(t *testing.T) {
	proc := t.TempDir()
	writeProc(t, proc, 300, 200, "tmux: client", "PATH=/bin", "TMUX=", "TMUX_PANE=%5")
	writeProc(t, proc, 200, 100, "odd) name", "TMUX=/tmp/outer,100,0", "TMUX_PANE=%2")
	writeProc(t, proc, 100, 1, "tmux: server")
	run := scripted{
		"/tmp/inner display-message -p -t %0 #{client_pid}": "300\n",
		"/tmp/outer display-message -p -t %2 #{client_pid}": "\n", // detached
	}
	p := Probe{Run: run, Proc: proc}
	got := p.Levels(context.Background(), env("TMUX", "/tmp/inner,77,0", "TMUX_PANE", "%0"))
	want := []Level{{"/tmp/inner", "%0"}, {"/tmp/outer", "%2"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("levels %+v, want %+v", got, want)
	}
	if got := p.Levels(context.Background(), env()); got != nil {
		t.Fatalf("outside tmux: %+v", got)
	}
	// A /proc that points back at the same server does not loop.
	writeProc(t, proc, 200, 100, "sh", "TMUX=/tmp/inner,77,0")
	if got := p.Levels(context.Background(), env("TMUX", "/tmp/inner,77,0", "TMUX_PANE", "%0")); len(got) != 1 {
		t.Fatalf("self loop: %+v", got)
	}
}

func TestPassthroughOfOldTmux(t *testing.T) {
	p := Probe{Run: scripted{"/tmp/s show-options -A -p -v -t %1 allow-passthrough": "ERR invalid option: allow-passthrough"}}
	if _, err := p.Passthrough(context.Background(), Level{"/tmp/s", "%1"}); !errors.Is(err, ErrNoPassthrough) {
		t.Fatalf("got %v", err)
	}
	if _, err := p.Passthrough(context.Background(), Level{"/tmp/gone", "%1"}); err == nil || errors.Is(err, ErrNoPassthrough) {
		t.Fatalf("a server that does not answer is another error: %v", err)
	}
}

// A real tmux server: the pane's effective allow-passthrough, inherited or
// set on the pane, and the terminal the server was started from.
func TestRealServer(t *testing.T) {
	s := tmuxtest.New(t, "")
	start := exec.Command(s.Bin, s.Args("new-session", "-d", "-s", "main", "sleep 60")...)
	start.Env = tmuxtest.Env("TERM_PROGRAM=WezTerm")
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	p := Probe{Run: Exec{Path: s.Bin}}
	ctx := context.Background()
	lvl := Level{Socket: s.Socket, Pane: strings.TrimSpace(s.Tmux(t, "display-message", "-p", "-t", "main", "#{pane_id}"))}

	check := func(want string) {
		t.Helper()
		got, err := p.Passthrough(ctx, lvl)
		if err != nil || got != want {
			t.Fatalf("allow-passthrough: %q %v, want %q", got, err, want)
		}
	}
	check("off") // tmux's default (notifications-and-sentinel.md §26)
	s.Tmux(t, "set-option", "-g", "allow-passthrough", "on")
	check("on")
	s.Tmux(t, "set-option", "-p", "-t", lvl.Pane, "allow-passthrough", "off")
	check("off")

	if got := p.OuterTermProgram(ctx, lvl); got != "WezTerm" {
		t.Fatalf("outer TERM_PROGRAM %q", got)
	}
	s.Tmux(t, "set-environment", "-g", "-u", "TERM_PROGRAM")
	if got := p.OuterTermProgram(ctx, lvl); got != "" {
		t.Fatalf("unset outer TERM_PROGRAM gave %q", got)
	}
	// Detached: no client, so no outer level to find.
	if got := p.Levels(ctx, env("TMUX", s.Socket+",1,0", "TMUX_PANE", lvl.Pane)); len(got) != 1 {
		t.Fatalf("levels %+v", got)
	}
}

// A tmux that does not answer within the caller's time is given up on
// then, even when what runs as tmux (a wrapper script) left a child that
// holds its output open: the terminal channel asks before each
// notification, and the notification, and the wrapper's exit behind it,
// must not wait on that child.
func TestExecGivesUpOnATmuxThatHangs(t *testing.T) {
	dir := t.TempDir()
	stop := filepath.Join(dir, "stop")
	bin := filepath.Join(dir, "tmux")
	script := "#!/bin/sh\nsh -c 'while [ ! -e \"$0\" ]; do sleep 0.05; done' '" + stop + "'\n"
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile(stop, nil, 0o600) // the child's way out, whatever happened
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Exec{Path: bin}.Run(ctx, "/nowhere", "display-message", "-p", "x")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a tmux that never answered: no error")
		}
	case <-time.After(time.Minute):
		_ = os.WriteFile(stop, nil, 0o600)
		<-done
		t.Fatal("Run was still waiting a minute after its deadline, for the child holding tmux's output")
	}
}

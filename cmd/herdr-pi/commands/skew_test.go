package commands

import (
	"bufio"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/settings"
)

// oneAnswerWrapper listens at a socket of its own and answers the first
// connection's hello with greet and every request after it with answer,
// as a wrapper of another build does.
func oneAnswerWrapper(t *testing.T, dir, greet, answer string) string {
	t.Helper()
	path := filepath.Join(dir, "c.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		if _, err := r.ReadString('\n'); err != nil {
			return
		}
		fmt.Fprintln(c, greet)
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
			fmt.Fprintln(c, answer)
		}
	}()
	return path
}

// status and waiting, upgraded while a wrapper of another build runs:
// what the person reads names both builds and the way out, not a refused
// token or "start the agent".
func TestStatusAndWaitingNameAWrapperOfAnotherBuild(t *testing.T) {
	for _, c := range []struct {
		name, greet, answer string
		args                []string
		want                []string
	}{
		{"a newer wrapper refuses this command's protocol",
			`{"type":"error","error":"protocol version 1 is older than this wrapper's 2 (herdr-pi v2.0.0)"}`, "",
			[]string{"status"}, []string{"v2.0.0", control.Build(), "the herdr-pi that started the wrapper"}},
		{"an older wrapper lacks the method",
			`{"type":"hello","version":1,"ok":true}`, `{"type":"response","id":"1","error":"unknown method \"waiting\""}`,
			[]string{"waiting", "start", "--source", "s", "--id", "1"}, []string{"older herdr-pi", control.Build(), "restart the wrapper"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newCmdEnv(t)
			sock := oneAnswerWrapper(t, e.runtime[:strings.LastIndex(e.runtime, "/")], c.greet, c.answer)
			env := append(append([]string{}, e.env...), control.EnvSocket+"="+sock, control.EnvToken+"=tok")
			code, _, errOut := run(t, env, c.args...)
			if code == 0 || strings.Contains(errOut, "token") || strings.Contains(errOut, "start the agent") {
				t.Errorf("exit %d: %s", code, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

// herdr-pi moved or removed since the process started (a wrapper that
// opens an inspection from its owner's /workflow menu days later): the
// pane could not run it, so no pane is opened and the error says why.
func TestAnOpenerRefusesAHerdrPiThatIsGone(t *testing.T) {
	e := newCmdEnv(t)
	f := NewFactory(IO{Env: e.env})
	gone := filepath.Join(t.TempDir(), "herdr-pi")
	f.Executable = func() (string, error) { return gone, nil }
	_, remove, err := newOpener(f, nil, []string{"/bin/sh"}, settings.EnvFrom(e.env), t.TempDir())
	if remove != nil {
		remove()
	}
	if err == nil || !strings.Contains(err.Error(), gone) || !strings.Contains(err.Error(), "no longer") {
		t.Fatalf("newOpener: %v, want a refusal naming %s", err, gone)
	}
}

// herdr-pi upgraded under a running wrapper: `status` shows that the
// wrapper still runs the build it started with, before anything fails.
func TestStatusNamesAWrapperStillOnAnotherBuild(t *testing.T) {
	for _, c := range []struct{ name, greet, build, want string }{
		{"older than builds in status", `{"type":"hello","version":1,"ok":true}`, "", "an older herdr-pi"},
		{"another build", `{"type":"hello","version":1,"ok":true,"herdr_pi":"v0.1.0"}`, `,"build":"v0.1.0"`, "herdr-pi v0.1.0, not this herdr-pi " + control.Build()},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newCmdEnv(t)
			result := `{"type":"response","id":"1","ok":true,"result":{"state":"idle","reasons":[],"wrapper_pid":77,"probe_connected":false` + c.build + `}}`
			sock := oneAnswerWrapper(t, e.runtime[:strings.LastIndex(e.runtime, "/")], c.greet, result)
			env := append(append([]string{}, e.env...), control.EnvSocket+"="+sock, control.EnvToken+"=tok")
			code, out, errOut := run(t, env, "status")
			if code != 0 || !strings.Contains(out, "wrapper  pid 77, "+c.want) || !strings.Contains(out, "start it again under herdr-pi wrap") {
				t.Errorf("exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
			}
		})
	}
}

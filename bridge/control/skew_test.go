package control

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Version skew: people upgrade herdr-pi while wrappers run for days, so a
// command of one build meets a wrapper of another. The peer of the other
// build is crafted here line by line, as that build writes them.

// fakeWrapper is a control socket that answers as another build of the
// wrapper would: greet is its hello reply (nil: none, it hangs up), and
// answer gives its lines for each line the client sends after the hello.
type fakeWrapper struct {
	path  string
	hello chan string // the client's hello, as it came
}

func serveFake(t *testing.T, greet []string, answer func(line string) []string) *fakeWrapper {
	t.Helper()
	fw := &fakeWrapper{path: filepath.Join(shortDir(t), "c.sock"), hello: make(chan string, 1)}
	ln, err := net.Listen("unix", fw.path)
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
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		fw.hello <- strings.TrimSuffix(line, "\n")
		for _, g := range greet {
			fmt.Fprintln(c, g)
		}
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			out := answer(strings.TrimSuffix(line, "\n"))
			if out == nil {
				return
			}
			for _, o := range out {
				fmt.Fprintln(c, o)
			}
		}
	}()
	return fw
}

func dialFake(t *testing.T, fw *fakeWrapper) (*Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return Dial(ctx, fw.path, "tok")
}

// oldHello is the hello reply of every wrapper built before builds named
// themselves in it.
const oldHello = `{"type":"hello","version":1,"ok":true}`

// A newer `herdr-pi open` asks a wrapper started by a build that predates
// the live handoff: the wrapper answers as it answers any method it does
// not know. The person reads that the two builds differ and what to do,
// not a bare "unknown method".
func TestAnOlderWrapperThatLacksAMethodIsNamedAsOlder(t *testing.T) {
	fw := serveFake(t, []string{oldHello}, func(line string) []string {
		return []string{`{"type":"response","id":"1","error":"unknown method \"handoff\""}`}
	})
	c, err := dialFake(t, fw)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h := <-fw.hello; !strings.Contains(h, `"herdr_pi":"`+Build()+`"`) {
		t.Errorf("the client's hello %s does not name its build %q", h, Build())
	}
	_, err = c.Handoff(context.Background(), HandoffAsk{RunID: "r", SessionID: "s", OwnerPID: 3}, nil)
	for _, want := range []string{`"handoff"`, "older herdr-pi", Build(), "restart"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("handoff to an older wrapper: got %v, want an error with %q", err, want)
		}
	}
	if !errors.Is(err, ErrSkew) {
		t.Errorf("the error %v is not ErrSkew", err)
	}
}

// The same for status and waiting: a wrapper of another build refuses a
// method (or the client's hello) and names its own build; the client's
// error names both.
func TestAWrapperOfAnotherBuildIsNamedWithBoth(t *testing.T) {
	greet := `{"type":"hello","version":1,"ok":true,"herdr_pi":"v0.9.0 (abc)"}`
	fw := serveFake(t, []string{greet}, func(line string) []string {
		return []string{`{"type":"response","id":"1","error":"unknown method \"waiting\""}`}
	})
	c, err := dialFake(t, fw)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.PeerBuild(); got != "v0.9.0 (abc)" {
		t.Errorf("PeerBuild = %q", got)
	}
	err = c.Wait(context.Background(), WaitRequest{Action: WaitStart, Source: "s", ID: "i"})
	for _, want := range []string{"v0.9.0 (abc)", Build(), "restart"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error with %q", err, want)
		}
	}
}

// A wrapper that speaks a newer protocol version than this client, or
// refuses the client's hello for another reason than its token, is not
// reported as a refused token.
func TestANewerOrRefusingWrapperIsNotAWrongToken(t *testing.T) {
	for name, greet := range map[string]string{
		"newer protocol": `{"type":"hello","version":2,"ok":true,"herdr_pi":"v2.0.0"}`,
		"refused hello":  `{"type":"error","error":"protocol version 1 is older than this wrapper's 2 (herdr-pi v2.0.0)"}`,
	} {
		t.Run(name, func(t *testing.T) {
			fw := serveFake(t, []string{greet}, func(string) []string { return nil })
			c, err := dialFake(t, fw)
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			if errors.Is(err, ErrUnauthorized) {
				t.Fatalf("reported as a refused token: %v", err)
			}
			if !errors.Is(err, ErrSkew) || !strings.Contains(err.Error(), "v2.0.0") || !strings.Contains(err.Error(), Build()) {
				t.Errorf("got %v, want ErrSkew naming v2.0.0 and %s", err, Build())
			}
		})
	}
}

// A newer command asks this wrapper for a method it does not know, or
// sends a message type it does not know: the wrapper answers with both
// builds and the way out instead of a bare refusal or a silent hang-up.
func TestANewerCommandHearsBothBuildsFromThisWrapper(t *testing.T) {
	f := start(t, func(c *Config) { c.Build = "v1.0.0" })
	newer := `{"type":"hello","token":%q,"role":"client","version":1,"herdr_pi":"v1.1.0"}`

	r := f.raw(t)
	r.line(t, fmt.Sprintf(newer, f.tok))
	if got := r.read(t); got != `{"type":"hello","version":1,"ok":true,"herdr_pi":"v1.0.0"}` {
		t.Fatalf("hello reply %s", got)
	}
	r.line(t, `{"type":"request","id":"1","method":"subscribe"}`)
	got := r.read(t)
	for _, want := range []string{`"type":"response"`, `unknown method \"subscribe\"`, "v1.0.0", "v1.1.0", "restart"} {
		if !strings.Contains(got, want) {
			t.Errorf("unknown method: got %s, want %q in it", got, want)
		}
	}

	r = f.raw(t)
	r.line(t, fmt.Sprintf(newer, f.tok))
	r.read(t)
	r.line(t, `{"type":"subscribe","id":"1"}`)
	got = r.read(t)
	for _, want := range []string{`"type":"error"`, `\"subscribe\"`, "v1.0.0", "v1.1.0", "restart"} {
		if !strings.Contains(got, want) {
			t.Errorf("unknown type: got %s, want %q in it", got, want)
		}
	}
	r.closed(t)

	// A hello of a newer protocol version is refused in words.
	r = f.raw(t)
	r.line(t, fmt.Sprintf(`{"type":"hello","token":%q,"role":"client","version":2,"herdr_pi":"v2.0.0"}`, f.tok))
	got = r.read(t)
	for _, want := range []string{`"type":"error"`, "version 2", "v1.0.0", "v2.0.0"} {
		if !strings.Contains(got, want) {
			t.Errorf("newer version: got %s, want %q in it", got, want)
		}
	}
	r.closed(t)
}

// A handoff ask of a newer version carries fields this wrapper does not
// know: it is refused for its version, not for the field.
func TestANewerHandoffAskIsRefusedForItsVersion(t *testing.T) {
	_, err := ParseHandoffAsk([]byte(`{"version":2,"run_id":"r","session_id":"s","owner_pid":3,"model":"x"}`))
	if err == nil || !strings.Contains(err.Error(), "different builds") || strings.Contains(err.Error(), "unknown field") {
		t.Fatalf("got %v, want a refusal for the version", err)
	}
}

// A newer wrapper's handoff stream may carry progress fields and events
// this `open` does not know: the handoff is followed to its handback, not
// given up on the first new word (giving up closes the connection, which
// cancels the handoff).
func TestANewerWrappersProgressIsFollowed(t *testing.T) {
	greet := `{"type":"hello","version":1,"ok":true,"herdr_pi":"v9"}`
	fw := serveFake(t, []string{greet}, func(line string) []string {
		if strings.Contains(line, `"cancel"`) {
			return nil
		}
		return []string{
			`{"type":"progress","id":"1","data":{"event":"launched","pane_id":"p1","colour":"blue"}}`,
			`{"type":"progress","id":"1","data":{"event":"teleported"}}`,
			`{"type":"response","id":"1","ok":true,"result":{"event":"handback","reason":"idle","needs_continue":false,"mood":"fine"}}`,
		}
	})
	c, err := dialFake(t, fw)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var seen []string
	final, err := c.Handoff(context.Background(), HandoffAsk{RunID: "r", SessionID: "s", OwnerPID: 3}, func(p Progress) { seen = append(seen, p.Event+":"+p.PaneID) })
	if err != nil {
		t.Fatalf("handoff: %v", err)
	}
	if final.Event != ProgressHandback || final.Reason != "idle" || strings.Join(seen, " ") != "launched:p1" {
		t.Errorf("final %+v, progress %q", final, seen)
	}
}

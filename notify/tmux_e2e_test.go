package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/notify/osc"
	"github.com/herdr-pi/herdr-pi/notify/tmux"
	"github.com/herdr-pi/herdr-pi/notify/tmux/tmuxtest"
)

// helperReport is what the helper inside a tmux pane found.
type helperReport struct {
	Target Target
}

const (
	helperEnv   = "HERDR_PI_NOTIFY_HELPER"
	reportEnv   = "HERDR_PI_NOTIFY_REPORT"
	sentMarker  = "HELPER-SENT"
	helperTitle = "Pi needs your input"
	helperBody  = "tmux-e2e"
)

// tmuxHelper runs when this test binary is started inside a tmux pane by
// the tests below: it sends one notification to its terminal the way the
// wrapper does — target resolved from its environment and real tmux —
// reports what it resolved, prints a marker, and stays until tmux kills it.
func tmuxHelper() bool {
	if os.Getenv(helperEnv) != "send" {
		return false
	}
	ctx := context.Background()
	probe := tmux.Probe{Run: tmux.Exec{}}
	// tmux passes passthrough only to an attached client: wait for every
	// level to have one.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		levels := probe.Levels(ctx, os.Getenv)
		if len(levels) > 0 && attached(ctx, levels[len(levels)-1]) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	target := ResolveTarget(ctx, os.Getenv, osc.DefaultTable(), probe)
	data, _ := json.Marshal(helperReport{Target: target})
	_ = os.WriteFile(os.Getenv(reportEnv), data, 0o600)
	term := Terminal{W: os.Stdout, Target: target}
	if err := term.Send(Message{Title: helperTitle, Body: helperBody, ID: "pi-ask"}); err != nil {
		os.Stdout.WriteString("SEND FAILED " + err.Error())
	}
	os.Stdout.WriteString(sentMarker)
	time.Sleep(time.Minute)
	os.Exit(0)
	return true
}

func attached(ctx context.Context, lvl tmux.Level) bool {
	out, err := tmux.Exec{}.Run(ctx, lvl.Socket, "display-message", "-p", "-t", lvl.Pane, "#{session_attached}")
	return err == nil && strings.TrimSpace(string(out)) != "0"
}

func helperCommand(t *testing.T) (cmd, report string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return "'" + exe + "' -test.run=^$", filepath.Join(t.TempDir(), "report.json")
}

func readReport(t *testing.T, path string) helperReport {
	t.Helper()
	var r helperReport
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil {
		t.Fatalf("helper report: %v", err)
	}
	return r
}

// wantOSC is the unwrapped sequence the terminal outside must receive: the
// outer terminal says WarpTerminal, which tmux hides from the pane.
var wantOSC = []byte("\x1b]777;notify;" + helperTitle + ";" + helperBody + "\x1b\\")

// Issue 6: in a real tmux server with allow-passthrough on, a notification
// sent from a pane reaches the terminal outside as the unwrapped OSC
// sequence.
func TestTmuxPassthroughReachesTheOuterTerminal(t *testing.T) {
	s := tmuxtest.New(t, "set -g allow-passthrough on\n")
	cmd, report := helperCommand(t)
	term := s.Attach(t, tmuxtest.Env("TERM_PROGRAM=WarpTerminal", helperEnv+"=send", reportEnv+"="+report), 24, 80,
		"new-session", "-s", "main", cmd)
	if !term.WaitFor([]byte(sentMarker), 20*time.Second) {
		t.Fatalf("helper never ran; terminal got %q", term.Output())
	}
	out := term.Output()
	if !bytes.Contains(out, wantOSC) {
		t.Fatalf("outer terminal did not get %q\n got %q", wantOSC, out)
	}
	if bytes.Contains(out, []byte("Ptmux;")) {
		t.Fatalf("a DCS wrapper leaked to the outer terminal: %q", out)
	}
	r := readReport(t, report)
	if r.Target.TmuxLevels != 1 || r.Target.Protocol != osc.OSC777 || r.Target.TermProgram != "WarpTerminal" || r.Target.From != "tmux global environment" {
		t.Fatalf("target %+v", r.Target)
	}

	// doctor agrees, asked from inside the pane's environment.
	lvl := r.Target.Tmux[0]
	checks := TmuxPassthrough(context.Background(), tmux.Probe{Run: tmux.Exec{Path: s.Bin}}, r.Target.Tmux)
	if len(checks) != 1 || checks[0].Status != CheckOK || !strings.Contains(checks[0].Detail, "allow-passthrough is on") || !strings.Contains(checks[0].Detail, lvl.Pane) {
		t.Fatalf("checks %+v", checks)
	}
}

// Issue 6: with passthrough off, nothing reaches the terminal, and doctor
// says why notifications will not show.
func TestTmuxPassthroughOffDoctorSaysWhy(t *testing.T) {
	s := tmuxtest.New(t, "")
	cmd, report := helperCommand(t)
	term := s.Attach(t, tmuxtest.Env("TERM_PROGRAM=WarpTerminal", helperEnv+"=send", reportEnv+"="+report), 24, 80,
		"new-session", "-s", "main", cmd)
	if !term.WaitFor([]byte(sentMarker), 20*time.Second) {
		t.Fatalf("helper never ran; terminal got %q", term.Output())
	}
	// tmux handles the pane's output in order: the notification came before
	// the marker, so by now it would have been passed on.
	if out := term.Output(); bytes.Contains(out, []byte("777;notify")) {
		t.Fatalf("passthrough is off, yet the terminal got the notification: %q", out)
	}
	r := readReport(t, report)
	lvl := r.Target.Tmux[0]
	checks := Doctor(context.Background(), DoctorInput{
		Config:  Config{Enabled: true, Channel: "auto", Table: osc.DefaultTable()},
		Getenv:  envOf("TMUX", lvl.Socket+",1,0", "TMUX_PANE", lvl.Pane, "TERM_PROGRAM", "tmux"),
		InHerdr: false,
		Tmux:    tmux.Probe{Run: tmux.Exec{Path: s.Bin}},
	})
	var found *Check
	for i := range checks {
		if checks[i].Name == "tmux passthrough" {
			found = &checks[i]
		}
	}
	if found == nil || found.Status != CheckFail || !strings.Contains(found.Detail, "allow-passthrough is off") ||
		!strings.Contains(found.Detail, "notifications will not show") || !strings.Contains(found.Fix, "set -g allow-passthrough on") {
		t.Fatalf("doctor: %+v", checks)
	}
	for _, c := range checks {
		if c.Name == "terminal protocol" && !strings.Contains(c.Detail, "osc777") {
			t.Fatalf("protocol row: %+v", c)
		}
	}
}

// A tmux inside a tmux pane: the sequence is wrapped once per level and
// still arrives unwrapped at the outer terminal.
func TestNestedTmuxWrapsOncePerLevel(t *testing.T) {
	if os.Getenv("TMUX") != "" {
		testenv.Missing(t, "a terminal outside tmux", "the tests run inside tmux, which would be one more level: run them outside tmux")
	}
	conf := "set -g allow-passthrough on\n"
	outer := tmuxtest.New(t, conf)
	inner := tmuxtest.New(t, conf)
	cmd, report := helperCommand(t)
	// A shell in the outer pane starts the inner tmux, as a person would.
	innerCmd := "unset TMUX; '" + inner.Bin + "' " + strings.Join(inner.Args("new-session", "-s", "inner", cmd), " ") + "; true"
	term := outer.Attach(t, tmuxtest.Env("TERM_PROGRAM=WarpTerminal", helperEnv+"=send", reportEnv+"="+report), 24, 80,
		"new-session", "-s", "outer", innerCmd)
	if !term.WaitFor([]byte(sentMarker), 20*time.Second) {
		t.Fatalf("helper never ran; terminal got %q", term.Output())
	}
	r := readReport(t, report)
	if r.Target.TmuxLevels != 2 || len(r.Target.Tmux) != 2 || r.Target.Tmux[0].Socket != inner.Socket || r.Target.Tmux[1].Socket != outer.Socket {
		t.Fatalf("levels %+v (inner %s, outer %s)", r.Target, inner.Socket, outer.Socket)
	}
	if r.Target.Protocol != osc.OSC777 {
		t.Fatalf("protocol %s from %q", r.Target.Protocol, r.Target.TermProgram)
	}
	if !term.WaitFor(wantOSC, 5*time.Second) {
		t.Fatalf("outer terminal did not get %q\n got %q", wantOSC, term.Output())
	}
	if bytes.Contains(term.Output(), []byte("Ptmux;")) {
		t.Fatalf("a DCS wrapper leaked: %q", term.Output())
	}
}

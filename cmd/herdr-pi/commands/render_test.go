package commands

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/internal/golden"
	"github.com/herdr-pi/herdr-pi/notify"
)

// fakeTerminal is a buffer that says it is a terminal of some width.
type fakeTerminal struct {
	bytes.Buffer
	width int
}

func (f *fakeTerminal) IsTerminal() bool { return true }
func (f *fakeTerminal) Size() (int, int) { return 24, f.width }

func TestLookDecidesColourFromStdoutAndTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name  string
		out   io.Writer
		env   []string
		color bool
		width int
	}{
		{"a pipe or buffer", &bytes.Buffer{}, nil, false, 0},
		{"a terminal", &fakeTerminal{width: 120}, nil, true, 120},
		{"NO_COLOR", &fakeTerminal{width: 120}, []string{"NO_COLOR=1"}, false, 120},
		{"NO_COLOR empty counts as unset", &fakeTerminal{width: 120}, []string{"NO_COLOR="}, true, 120},
		{"a dumb terminal", &fakeTerminal{width: 80}, []string{"TERM=dumb"}, false, 80},
	} {
		l := lookFor(IO{Out: tc.out, Env: tc.env})
		if l.Color != tc.color || l.Width != tc.width {
			t.Errorf("%s: color %v width %d, want %v %d", tc.name, l.Color, l.Width, tc.color, tc.width)
		}
		if !tc.color && render.DoctorStatus(l, doctor.Fail) != doctor.Fail {
			t.Errorf("%s: styled without colour: %q", tc.name, render.DoctorStatus(l, doctor.Fail))
		}
	}
}

// sampleRows has every status, two sections, a long detail and fix.
var sampleRows = []doctor.Row{
	{Section: "herdr", Name: "environment", Status: doctor.OK, Detail: "inside Herdr pane w1:p1 (HERDR_ENV=1, HERDR_SOCKET_PATH and HERDR_PANE_ID set)"},
	{Section: "herdr", Name: "toasts", Status: doctor.Warn, Detail: "Herdr's toasts are off ([ui.toast] delivery is \"off\" in ~/.config/herdr/config.toml): herdr-pi's notifications inside Herdr come back \"disabled\"",
		Fix: "set [ui.toast] delivery = \"herdr\" (or \"terminal\", \"system\") in ~/.config/herdr/config.toml and run 'herdr server reload-config'"},
	{Section: "pi", Name: "pi", Status: doctor.Fail, Detail: "no pi on PATH: 'herdr-pi wrap pi' cannot start Pi", Fix: "install Pi with 'npm install -g @earendil-works/pi-coding-agent' (it needs Node 22.19 or newer), or put the directory that holds pi on PATH"},
	{Section: "pi", Name: "herdr integration", Status: doctor.OK, Detail: "Herdr's own Pi integration is not installed"},
}

func TestDoctorTextGolden(t *testing.T) {
	t.Run("plain", func(t *testing.T) {
		var b bytes.Buffer
		if err := render.DoctorText(&b, sampleRows, render.New(false, 0)); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, golden.Path(t), b.String())
	})
	t.Run("colour at 80 columns", func(t *testing.T) {
		var b bytes.Buffer
		if err := render.DoctorText(&b, sampleRows, render.New(true, 80)); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, golden.Path(t), b.String())
		for i, line := range strings.Split(b.String(), "\n") {
			if w := visibleWidth(line); w > 80 {
				t.Errorf("line %d is %d columns wide: %q", i+1, w, line)
			}
		}
	})
}

// visibleWidth measures a line as the terminal shows it.
func visibleWidth(s string) int {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return len([]rune(b.String()))
}

// sampleStatus is a blocked Pi with three reasons of different ages.
func sampleStatus(now time.Time) control.Status {
	return control.Status{
		Agent: "pi", State: "blocked", Message: "approve deploy", Since: now.Add(-133 * time.Second),
		SessionFile: "/home/me/.pi/agent/sessions/--home-me-api--/2026-11-29T14-00-02-118Z_3f0c9a2e.jsonl",
		ChildPID:    48211, WrapperPID: 48207, ProbeConnected: true,
		Reasons: []control.Reason{
			{Kind: "wait", Key: "deploy-hook:42", Label: "approve deploy", Since: now.Add(-133 * time.Second), Reported: true},
			{Kind: "herdr-blocked", Key: "herdr:blocked#1", Label: "evil\x1b]0;title\x07label", Since: now.Add(-2*time.Hour - 5*time.Minute)},
			{Kind: "sentinel", Key: "sentinel", Label: "input needed", Since: now.Add(-10 * time.Second)},
		},
	}
}

var statusNow = time.Date(2026, 11, 29, 14, 4, 24, 0, time.UTC)

func TestStatusTextGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   control.Status
		l    look
		self string // this command's build ("": not compared)
	}{
		{"blocked plain", sampleStatus(statusNow), render.New(false, 0), ""},
		{"blocked colour", sampleStatus(statusNow), render.New(true, 100), ""},
		{"idle without probe or session", control.Status{Agent: "claude", Label: "backend", State: "idle", Since: statusNow.Add(-26 * time.Hour), ChildPID: 7, WrapperPID: 6}, render.New(false, 0), ""},
		{"unknown at start", control.Status{State: "unknown", WrapperPID: 6}, render.New(true, 80), ""},
		{"the same build", control.Status{State: "idle", WrapperPID: 6, Build: "v1.4.0"}, render.New(false, 0), "v1.4.0"},
		{"a wrapper of another build", control.Status{State: "idle", WrapperPID: 6, Build: "v1.3.0 (0a1b2c3d4e5f)"}, render.New(true, 80), "v1.4.0"},
		{"a wrapper older than builds in status", control.Status{State: "idle", WrapperPID: 6}, render.New(false, 0), "v1.4.0"},
		{"a wait held by a process", control.Status{Agent: "pi", State: "blocked", WrapperPID: 6, Reasons: []control.Reason{
			{Kind: "wait", Key: "hook:deploy-hook:42", Label: "approve deploy", Since: statusNow.Add(-133 * time.Second), HolderPID: 48230},
			{Kind: "wait", Key: "hook:lint:1", Label: "waiting for lint", HolderPID: 48231},
			{Kind: "wait", Key: "hook:notes:2", Label: "waiting for notes", Since: statusNow.Add(-5 * time.Second)},
		}}, render.New(false, 0), ""},
		{"notification channels", control.Status{Agent: "pi", State: "idle", WrapperPID: 6, Notifications: []control.NotifyChannel{
			{Channel: "herdr", Sent: 2, Last: "disabled", Hint: notify.HerdrHint("disabled")},
			{Channel: "terminal"},
			{Channel: "ntfy", Sent: 1, Failed: 2, Failing: true, Last: "http 401: unauthorized\x1b]0;t\x07", Hint: "the server refused access to the topic: check [notify.ntfy] token"},
		}}, render.New(true, 80), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := render.Status(tc.st, tc.self, statusNow, tc.l)
			golden.Check(t, golden.Path(t), got)
			if strings.ContainsAny(got, "\x07") || strings.Contains(got, "\x1b]") {
				t.Errorf("a label's control characters reached the output: %q", got)
			}
		})
	}
}

func TestStatusDocExampleMatchesTheSchema(t *testing.T) {
	validate(t, compileSchema(t, "status"), docExample(t, "status"))
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 400 * time.Millisecond: "0s", 45 * time.Second: "45s", 133 * time.Second: "2m13s",
		time.Hour + 2*time.Minute + 40*time.Second: "1h02m", 76 * time.Hour: "3d4h",
	} {
		if got := render.Age(d); got != want {
			t.Errorf("render.Age(%v) = %q, want %q", d, got, want)
		}
	}
	if got := render.Clock(statusNow.Add(-time.Hour), statusNow); got != "13:04:24" {
		t.Errorf("clock today: %q", got)
	}
	if got := render.Clock(statusNow.Add(-26*time.Hour), statusNow); got != "2026-11-28 12:04:24" {
		t.Errorf("clock yesterday: %q", got)
	}
}

// Through a real terminal: doctor colours its output when stdout is a pty,
// and not with NO_COLOR; the width comes from the pty.
func TestDoctorColoursARealTerminal(t *testing.T) {
	for _, tc := range []struct {
		env    []string
		escape bool
	}{{nil, true}, {[]string{"NO_COLOR=1"}, false}} {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 90}); err != nil {
			t.Fatal(err)
		}
		w := doctortest.New(t).Healthy().Set(tc.env...)
		if l := lookFor(IO{Out: tty, Env: w.Env()}); l.Width != 90 {
			t.Errorf("width %d from a 90-column pty", l.Width)
		}
		done := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(ptmx)
			done <- b
		}()
		code := Main(context.Background(), []string{"herdr-pi", "doctor", "runtime"}, IO{In: strings.NewReader(""), Out: tty, Err: io.Discard, Env: w.Env()})
		tty.Close()
		out := <-done
		ptmx.Close()
		if code != 0 {
			t.Errorf("exit %d: %q", code, out)
		}
		if got := bytes.Contains(out, []byte("\x1b[1mRuntime\x1b[0m")); got != tc.escape {
			t.Errorf("env %q: bold section title %v, want %v: %q", tc.env, got, tc.escape, out)
		}
		if got := bytes.Contains(out, []byte("\x1b[")); got != tc.escape {
			t.Errorf("env %q: escapes %v, want %v: %q", tc.env, got, tc.escape, out)
		}
	}
}

package commands

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/notify/tmux"
	"github.com/herdr-pi/herdr-pi/settings"
)

// fakeHerdr answers notification.show with a fixed reason and records the
// toasts.
type fakeHerdr struct {
	mu     sync.Mutex
	reason string
	toasts []notify.HerdrToast
}

func (f *fakeHerdr) ShowNotification(_ context.Context, t notify.HerdrToast) (notify.HerdrResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.toasts = append(f.toasts, t)
	return notify.HerdrResult{Shown: f.reason == notify.ReasonShown, Reason: f.reason}, nil
}

// ttyBuffer stands in for /dev/tty.
type ttyBuffer struct {
	bytes.Buffer
	closed bool
}

func (b *ttyBuffer) Close() error { b.closed = true; return nil }

type notifyCase struct {
	env   []string
	files map[string]string // relative to HOME
	opts  notifyOptions
	herdr *fakeHerdr
	tty   *ttyBuffer
	tmux  notify.TmuxProbe
}

// runNotify runs the command in-process with a private HOME and returns
// the exit code, stderr and what reached the terminal.
func runNotify(t *testing.T, c notifyCase) (int, string, string) {
	t.Helper()
	home := t.TempDir()
	for name, data := range c.files {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	f := NewFactory(IO{Out: &stdout, Err: &stderr, Env: append([]string{"HOME=" + home}, c.env...)})
	deps := notifyDeps{
		herdr: func(settings.Herdr) (notify.Herdr, error) {
			if c.herdr == nil {
				return nil, errors.New("socket refused")
			}
			return c.herdr, nil
		},
		openTTY: func() (io.WriteCloser, error) {
			if c.tty == nil {
				return nil, errors.New("open /dev/tty: no such device or address")
			}
			return c.tty, nil
		},
		tmux:     c.tmux,
		deadline: 5 * time.Second,
	}
	err := notifyRun(context.Background(), f, &c.opts, deps)
	code := exitCode(err, &stderr)
	if stdout.Len() != 0 {
		t.Errorf("stdout is not a terminal, yet got %q", stdout.String())
	}
	term := ""
	if c.tty != nil {
		term = c.tty.String()
		if !c.tty.closed && c.tty.Len() > 0 {
			t.Error("the controlling terminal was not closed")
		}
	}
	return code, stderr.String(), term
}

var inHerdr = []string{"HERDR_ENV=1", "HERDR_SOCKET_PATH=/tmp/herdr.sock", "HERDR_PANE_ID=w1:p1"}

func TestNotifyInsideHerdr(t *testing.T) {
	h := &fakeHerdr{reason: notify.ReasonShown}
	code, stderr, _ := runNotify(t, notifyCase{env: inHerdr, herdr: h,
		opts: notifyOptions{Title: "Build\x1b]0;x\x07 done", Body: "api\u202e\nweb", Sound: "request"}})
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := notify.HerdrToast{Title: "Build ]0;x done", Body: "api web", Sound: "request"}
	if len(h.toasts) != 1 || h.toasts[0] != want {
		t.Fatalf("toasts %+v, want %+v", h.toasts, want)
	}

	// Herdr's toasts are off on purpose: success, with a note.
	code, stderr, _ = runNotify(t, notifyCase{env: inHerdr, herdr: &fakeHerdr{reason: notify.ReasonDisabled}, opts: notifyOptions{Title: "t"}})
	if code != 0 || !strings.Contains(stderr, "delivery") {
		t.Fatalf("disabled: exit %d: %s", code, stderr)
	}
	// Nobody to show it to: a failure with the reason.
	code, stderr, _ = runNotify(t, notifyCase{env: inHerdr, herdr: &fakeHerdr{reason: notify.ReasonNoForegroundClient}, opts: notifyOptions{Title: "t"}})
	if code != 1 || !strings.Contains(stderr, "no_foreground_client") {
		t.Fatalf("no client: exit %d: %s", code, stderr)
	}
	// No socket client.
	code, stderr, _ = runNotify(t, notifyCase{env: inHerdr, opts: notifyOptions{Title: "t"}})
	if code != 1 || !strings.Contains(stderr, "cannot reach Herdr at /tmp/herdr.sock: socket refused") {
		t.Fatalf("no Herdr: exit %d: %s", code, stderr)
	}
	// The default sound is none: Herdr plays its own on state changes.
	h = &fakeHerdr{reason: notify.ReasonShown}
	runNotify(t, notifyCase{env: inHerdr, herdr: h, opts: notifyOptions{Title: "t"}})
	if h.toasts[0].Sound != "none" {
		t.Fatalf("sound %q", h.toasts[0].Sound)
	}
}

// Outside Herdr, with stdout not a terminal, the sequence goes to the
// controlling terminal.
func TestNotifyOutsideHerdrWritesTheTerminal(t *testing.T) {
	tty := &ttyBuffer{}
	code, stderr, term := runNotify(t, notifyCase{env: []string{"TERM_PROGRAM=WarpTerminal"}, tty: tty,
		opts: notifyOptions{Title: "Build;done", Body: "api\x1b[2J"}})
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "\x1b]777;notify;Build:done;api [2J\x1b\\"; term != want {
		t.Fatalf("terminal got %q\n% x\nwant %q\n% x", term, term, want, want)
	}
	code, stderr, _ = runNotify(t, notifyCase{env: []string{"TERM_PROGRAM=WarpTerminal"}, opts: notifyOptions{Title: "t"}})
	if code != 1 || !strings.Contains(stderr, "no terminal to show it on") {
		t.Fatalf("no terminal: exit %d: %s", code, stderr)
	}
}

func TestNotifySuppressedAndMisconfigured(t *testing.T) {
	tty := &ttyBuffer{}
	code, stderr, term := runNotify(t, notifyCase{tty: tty, files: map[string]string{".config/herdr-pi/config.toml": "[notify]\nenabled = false\n"},
		opts: notifyOptions{Title: "t"}})
	if code != 0 || term != "" || !strings.Contains(stderr, "notifications are off") {
		t.Fatalf("disabled: exit %d, %q: %s", code, term, stderr)
	}
	code, stderr, _ = runNotify(t, notifyCase{tty: tty, files: map[string]string{".config/herdr-pi/config.toml": "[notify]\nchannel = \"herdr\"\n"},
		opts: notifyOptions{Title: "t"}})
	if code != 1 || !strings.Contains(stderr, "not a complete Herdr pane") {
		t.Fatalf("herdr outside Herdr: exit %d: %s", code, stderr)
	}
	code, stderr, _ = runNotify(t, notifyCase{tty: tty, opts: notifyOptions{Title: "\x1b\x07"}})
	if code != 2 || !strings.Contains(stderr, "--title is empty") {
		t.Fatalf("empty title: exit %d: %s", code, stderr)
	}
	code, stderr, _ = runNotify(t, notifyCase{tty: tty, opts: notifyOptions{Title: "t", Sound: "loud"}})
	if code != 2 || !strings.Contains(stderr, `--sound "loud"`) {
		t.Fatalf("bad sound: exit %d: %s", code, stderr)
	}
}

const seedConfig = ".pi/agent/extensions/pi-terminal-notifications/config.json"

// The seed's config.json is honoured (notifications-and-sentinel.md D1.2,
// through real files), and herdr-pi's config.toml overrides it.
func TestNotifyProtocolFromSeedConfigAndConfigToml(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		term  string
		want  string
	}{
		{"invalid seed file: defaults", map[string]string{seedConfig: "{ invalid json"}, "unknown", "\x1b]99;"},
		{"seed file entry", map[string]string{seedConfig: `{"fallback":"osc9","termPrograms":{"Custom":"osc777"}}`}, "Custom", "\x1b]777;"},
		{"seed file fallback", map[string]string{seedConfig: `{"fallback":"osc9","termPrograms":{"Custom":"osc777"}}`}, "Unknown", "\x1b]9;"},
		{"seed case-insensitive", map[string]string{seedConfig: `{"termPrograms":{"MyTerminal":"osc9"}}`}, "myterminal", "\x1b]9;"},
		{"config.toml overrides the seed", map[string]string{
			seedConfig:                     `{"fallback":"osc9","termPrograms":{"Custom":"osc777"}}`,
			".config/herdr-pi/config.toml": "[notify]\nfallback = \"osc777\"\n[notify.term_programs]\nCustom = \"osc99\"\n",
		}, "Custom", "\x1b]99;"},
		{"an entry in another case overrides the built-in", map[string]string{
			".config/herdr-pi/config.toml": "[notify.term_programs]\nwezterm = \"osc777\"\n",
		}, "WezTerm", "\x1b]777;"},
		{"config.toml overrides the seed in another case", map[string]string{
			seedConfig:                     `{"termPrograms":{"WezTerm":"osc777"}}`,
			".config/herdr-pi/config.toml": "[notify.term_programs]\nwezterm = \"osc99\"\n",
		}, "WezTerm", "\x1b]99;"},
		{"config.toml fallback over the seed's", map[string]string{
			seedConfig:                     `{"fallback":"osc9"}`,
			".config/herdr-pi/config.toml": "[notify]\nfallback = \"osc777\"\n",
		}, "Unknown", "\x1b]777;"},
	}
	for _, c := range cases {
		tty := &ttyBuffer{}
		code, stderr, term := runNotify(t, notifyCase{env: []string{"TERM_PROGRAM=" + c.term}, files: c.files, tty: tty, opts: notifyOptions{Title: "t", Body: "b"}})
		if code != 0 || !strings.HasPrefix(term, c.want) {
			t.Errorf("%s: exit %d %s, terminal %q, want prefix %q", c.name, code, stderr, term, c.want)
		}
	}
}

// notifyDoctorRows are doctor's notification rows in the environment env.
func notifyDoctorRows(t *testing.T, env ...string) []doctor.Row {
	return doctor.Run(t.Context(), doctorInput(NewFactory(IO{Env: env})), doctor.Pick([]string{"notify"}))
}

func TestNotifyDoctorChecks(t *testing.T) {
	home := t.TempDir()
	checks := notifyDoctorRows(t, "HOME="+home, "TERM_PROGRAM=WarpTerminal")
	var rows []string
	for _, c := range checks {
		rows = append(rows, c.Status+" "+c.Name+": "+c.Detail)
	}
	all := strings.Join(rows, "\n")
	want := strings.Join([]string{
		"ok notification channel: terminal: outside Herdr, so the OSC sequence your terminal understands",
		`ok terminal protocol: osc777, for TERM_PROGRAM="WarpTerminal" (environment)`,
		"ok ntfy: off (opt in with [notify.ntfy] enabled = true, server and topic)",
	}, "\n")
	if all != want {
		t.Errorf("rows:\n%s\nwant:\n%s", all, want)
	}
	checks = notifyDoctorRows(t, "HOME="+home, "HERDR_ENV=1", "HERDR_SOCKET_PATH=/s", "HERDR_PANE_ID=w1:p1")
	if checks[0].Name != "notification channel" || !strings.HasPrefix(checks[0].Detail, "herdr") {
		t.Errorf("inside Herdr: %+v", checks[0])
	}
}

// ntfy gets the notification too when it is enabled (docs/configuration.md),
// also where there is no terminal to show it on — a hook or cron job with
// neither a terminal stdout nor a controlling terminal. The terminal's
// absence is still said, and still fails the command.
func TestNotifyWithoutATerminalStillPushesToNtfy(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.URL.Path+" "+r.Header.Get("Title")+" "+string(body))
		mu.Unlock()
	}))
	defer srv.Close()
	cfg := "[notify.ntfy]\nenabled = true\nserver = \"" + srv.URL + "\"\ntopic = \"builds\"\n"
	code, stderr, _ := runNotify(t, notifyCase{files: map[string]string{".config/herdr-pi/config.toml": cfg},
		opts: notifyOptions{Title: "Tests passed", Body: "api"}})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "/builds Tests passed api" {
		t.Errorf("ntfy got %q", got)
	}
	if code != 1 || !strings.Contains(stderr, "no terminal to show it on") || !strings.Contains(stderr, "ntfy") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// An empty --title is said to be empty, the usual mistake (--title
// "$UNSET"); only a title that had nothing but control characters is said
// to have lost them.
func TestNotifyEmptyTitleSaysWhatWasWrong(t *testing.T) {
	env := newCmdEnv(t).env
	for _, tc := range []struct{ title, says string }{
		{"", "herdr-pi notify: --title is empty: give the text to show"},
		{"  \t", "herdr-pi notify: --title is only spaces: give the text to show"},
		{"\x1b\x07", "herdr-pi notify: --title is empty once control characters are removed"},
	} {
		code, out, errOut := run(t, env, "notify", "--title", tc.title)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, tc.says) {
			t.Errorf("--title %q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.title, code, out, errOut, tc.says)
		}
	}
}

// A channel that sent nothing before the deadline did not deliver: the
// command fails naming it, though nothing reported an error.
func TestNotifyOutcomeCountsASilentChannelAsNotDelivered(t *testing.T) {
	var stderr bytes.Buffer
	err := notifyOutcome(IO{Err: &stderr}, []notify.ChannelStatus{{Channel: "herdr", Sent: 0}})
	if err == nil || !strings.Contains(err.Error(), "herdr: not delivered before the deadline") {
		t.Errorf("notifyOutcome = %v; want herdr not delivered", err)
	}
	if code := exitCode(err, &stderr); code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
}

// oneTmux is one tmux server around the process, whose allow-passthrough
// is pass.
type oneTmux struct{ pass string }

func (oneTmux) Levels(context.Context, func(string) string) []tmux.Level {
	return []tmux.Level{{Socket: "/tmp/t/s", Pane: "%2"}}
}
func (oneTmux) OuterTermProgram(context.Context, tmux.Level) string { return "WarpTerminal" }
func (o oneTmux) Passthrough(context.Context, tmux.Level) (string, error) {
	return o.pass, nil
}
func (oneTmux) OnShow(context.Context, tmux.Level) (bool, error) { return true, nil }

// In a tmux that drops the sequence, notify rings the bell and says on
// stderr why the words did not show and what lets them through; with
// passthrough on it writes the wrapped sequence and says nothing.
func TestNotifyInTmuxWithoutPassthroughSaysSo(t *testing.T) {
	env := []string{"TMUX=/tmp/t/s,1,0", "TMUX_PANE=%2"}
	tty := &ttyBuffer{}
	code, stderr, term := runNotify(t, notifyCase{env: env, tty: tty, tmux: oneTmux{pass: "off"}, opts: notifyOptions{Title: "Tests passed"}})
	if code != 0 || term != "\a" {
		t.Fatalf("exit %d, terminal %q, want 0 and the bell: %s", code, term, stderr)
	}
	if !strings.Contains(stderr, "got a bell, not the notification") || !strings.Contains(stderr, "set -g allow-passthrough on") {
		t.Fatalf("stderr %q", stderr)
	}
	tty = &ttyBuffer{}
	code, stderr, term = runNotify(t, notifyCase{env: env, tty: tty, tmux: oneTmux{pass: "on"}, opts: notifyOptions{Title: "Tests passed"}})
	if code != 0 || stderr != "" || !strings.HasPrefix(term, "\x1bPtmux;") || !strings.Contains(term, "777;notify;Tests passed") {
		t.Fatalf("exit %d, terminal %q, stderr %q", code, term, stderr)
	}
}

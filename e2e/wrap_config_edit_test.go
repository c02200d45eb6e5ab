package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// config.toml edited while a wrapper runs (docs/configuration.md, "While
// agents run"): the running wrapper keeps what it read when it started.
// Here the terminal channel is turned off in the middle of the run; the
// wrapper still notifies the second question as it did the first, and a
// command started afterwards reads the file as it is now.
func TestARunningWrapperKeepsTheConfigItStartedWith(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	off := filepath.Join(dir, "off.toml")
	if err := os.WriteFile(config, []byte("[herdr]\nagent = \"pi\"\n[notify]\nchannel = \"terminal\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(off, []byte("[herdr]\nagent = \"pi\"\n[notify]\nchannel = \"off\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := agentScript(t,
		`print \e[?2026hready\e[?2026l\r\n`,
		"run herdr-pi waiting start --source deploy --id 1 --label first",
		"sleep 400ms",
		"run herdr-pi waiting stop --source deploy --id 1",
		"run cp "+off+" "+config,
		"run herdr-pi waiting start --source deploy --id 2 --label second",
		"sleep 400ms",
		"run herdr-pi waiting stop --source deploy --id 2",
		"sleep 300ms",
	)
	env := append(withoutHerdr(os.Environ()), "TERM_PROGRAM=WarpTerminal", "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir, "HERDR_PI_CONFIG="+config)
	r, err := startOuter(outerOptions{Keep: true, Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", script}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v\n%q", status, err, r.bytes())
	}
	got := r.bytes()
	for _, label := range []string{"first", "second"} {
		if want := []byte("\x1b]777;notify;Pi needs your input;" + label); bytes.Count(got, want) != 1 {
			t.Errorf("want one %q on the terminal, got:\n%q", want, got)
		}
	}
	// A command started now reads the edited file.
	out, code := herdrPi(t, env, "doctor", "notify")
	if code != 0 && code != 1 || !bytes.Contains(out, []byte(`notify.channel = "off"`)) {
		t.Errorf("doctor notify after the edit: exit %d\n%s", code, out)
	}
}

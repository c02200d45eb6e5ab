package commands

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/logfile"
	"github.com/herdr-pi/herdr-pi/pane/detect"
	"github.com/herdr-pi/herdr-pi/pane/state"
	"github.com/herdr-pi/herdr-pi/settings"
)

// The sinks (Herdr's report, the notifications) hear a state before the
// log writes it, whose write may block on a slow disk; the trace, when
// asked for, has it before them, so a test that sees Herdr show a state
// finds it in the trace.
func TestStateSinksHearBeforeTheLogAfterTheTrace(t *testing.T) {
	dir := t.TempDir()
	log := logfile.Open(logfile.Options{Dir: dir, Tag: "wrap"})
	defer log.Close()
	trace, logPath := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, logfile.DefaultName)
	manifest, ok := detect.Embedded().Lookup("pi")
	if !ok {
		t.Fatal("no embedded pi manifest")
	}
	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
	var inLog, inTrace, heard bool
	sink := func(e state.Event) {
		if e.Kind == state.EventTransition && e.To == state.Blocked {
			heard = true
			inLog = strings.Contains(read(logPath), "→ blocked")
			inTrace = strings.Contains(read(trace), `"to":"blocked"`)
		}
	}
	var errb bytes.Buffer
	o, stop := startDetection(IO{Err: &errb}, settings.EnvFrom([]string{"HERDR_PI_TRACE=" + trace}), settings.Defaults(), manifest, log, sink)
	o.Machine.Open(state.Reason{Key: "hook:t", Kind: state.KindHook, Label: "waiting for t"})
	stop()
	if !heard {
		t.Fatalf("the sink never heard the blocked state; stderr %q", errb.String())
	}
	if inLog || !inTrace {
		t.Errorf("when the sink heard it: in the log %v (want false), in the trace %v (want true)", inLog, inTrace)
	}
	if !strings.Contains(read(logPath), "→ blocked") {
		t.Errorf("the log never got the state:\n%s", read(logPath))
	}
}

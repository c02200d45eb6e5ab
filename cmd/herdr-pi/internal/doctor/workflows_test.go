package doctor

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
)

// Which integration owns workflow panes follows Pi's packages: none, the
// engine alone (herdr-pi's actions under wrap), or @piewf/herdr too (a
// warning: a Pi without herdr-pi uses upstream's).
func TestWorkflowPanesRow(t *testing.T) {
	for _, c := range []struct {
		name, settings, status, says string
	}{
		{"no settings", "", OK, "not among Pi's packages"},
		{"engine only", `{"packages":["npm:pi-extensible-workflows@5.7.0"]}`, OK, "herdr-pi owns workflow panes"},
		{"engine as an object", `{"packages":[{"source":"npm:pi-extensible-workflows","extensions":["x"]}]}`, OK, "herdr-pi owns workflow panes"},
		{"both", `{"packages":["npm:pi-extensible-workflows","npm:@piewf/herdr"]}`, Warn, "both herdr-pi and @piewf/herdr"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := doctortest.New(t)
			in := input(w, time.Minute)
			if c.settings != "" {
				w.File(filepath.Join(in.Paths.PiAgentDir, "settings.json"), c.settings, 0o600)
			}
			r := workflowsRow(in)
			if r.Status != c.status || !strings.Contains(r.Detail, c.says) {
				t.Fatalf("%s: %s", r.Status, r.Detail)
			}
			if r.Status != OK && r.Fix == "" {
				t.Fatal("a warning without a fix")
			}
		})
	}
}

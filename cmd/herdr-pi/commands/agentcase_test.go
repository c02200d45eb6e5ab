package commands

import (
	"bytes"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/logfile"
	"github.com/herdr-pi/herdr-pi/settings"
)

// Agent ids are matched exactly, and the product is written "Pi": --agent
// Pi (or [detect] agent = "Pi") finds no manifest, and wrap then reads the
// screen as pi but gives Pi no probe and Herdr the label "Pi". The warning
// must point at the id that was meant, not only list the known ones.
func TestAnAgentIDThatDiffersOnlyInCaseNamesTheOneMeant(t *testing.T) {
	dir := t.TempDir()
	e := newCmdEnv(t)
	code, _, errOut := run(t, append(e.env, "HERDR_PI_LOG=off"), "detect", "--agent", "Pi", "-")
	if code != 1 || !strings.Contains(errOut, `no manifest for agent "Pi"`) || !strings.Contains(errOut, `did you mean "pi"?`) {
		t.Errorf("detect --agent Pi: exit %d, %q; want 1, and did you mean \"pi\"?", code, errOut)
	}

	var errb bytes.Buffer
	paths := settings.Resolve(settings.EnvFrom([]string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir}))
	_, agent := pickManifest(IO{Err: &errb}, paths, settings.Defaults(), &wrapOptions{Agent: "Pi", Argv: []string{"./pi-dev"}}, logfile.Open(logfile.Options{}))
	if agent != "Pi" || !strings.Contains(errb.String(), `no detection manifest for agent "Pi"`) || !strings.Contains(errb.String(), `did you mean "pi"?`) {
		t.Errorf("wrap --agent Pi: agent %q, stderr %q; want a warning with did you mean \"pi\"?", agent, errb.String())
	}
	errb.Reset()
	pickManifest(IO{Err: &errb}, paths, settings.Defaults(), &wrapOptions{Agent: "claude", Argv: []string{"claude"}}, logfile.Open(logfile.Options{}))
	if strings.Contains(errb.String(), "did you mean") {
		t.Errorf("wrap --agent claude: %q; an id like no known one has nothing to suggest", errb.String())
	}
}

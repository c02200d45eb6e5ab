package doctor

import (
	"slices"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/settings"
)

// Doctor run inside a wrapped agent (Pi's bash tool) must not hand the
// programs it starts either half of the way to that wrapper: the socket
// alone already names a wrapper a program could probe, and Pi must stay
// offline whatever the caller set.
func TestProgramEnvLeavesTheWrapperOut(t *testing.T) {
	env := settings.EnvFrom([]string{
		control.EnvSocket + "=/run/hp/control.sock", control.EnvToken + "=secret",
		"PI_OFFLINE=0", "PI_SKIP_VERSION_CHECK=0", "PATH=/bin", "HOME=/home/me",
	})
	got := programEnv(env)
	slices.Sort(got)
	want := []string{"HOME=/home/me", "PATH=/bin", "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1"}
	if !slices.Equal(got, want) {
		t.Errorf("programEnv = %q, want %q", got, want)
	}
	for _, kv := range got {
		if strings.HasPrefix(kv, control.EnvSocket+"=") || strings.HasPrefix(kv, control.EnvToken+"=") {
			t.Errorf("programEnv keeps %q", kv)
		}
	}
}

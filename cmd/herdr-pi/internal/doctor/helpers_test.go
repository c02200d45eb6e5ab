package doctor

import (
	"os/exec"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/settings"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// input is what the checks get in world w. The notify section is the
// doctor command's to test: it needs the command's merged notification
// config.
func input(w *doctortest.World, timeout time.Duration) Input {
	env := settings.EnvFrom(w.Env())
	paths := settings.Resolve(env)
	cfg, cfgErr := paths.LoadConfig()
	return Input{Env: env, Paths: paths, Config: cfg, ConfigErr: cfgErr, ProgramTimeout: timeout}
}

// rowsByName indexes rows by "section/name".
func rowsByName(rows []Row) map[string]Row {
	m := map[string]Row{}
	for _, r := range rows {
		m[r.Section+"/"+r.Name] = r
	}
	return m
}

// deadPID is the pid of a child that ran and was reaped: surely gone.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
